/**
 * Several `syncmirror run` replicas on one PostgreSQL database (docs/scaling-out.md): each scheduled
 * time runs on exactly one replica, never two passes of a mirror at once, and a replica killed mid-export
 * is replaced by another that finishes the same trigger (one POST) into a database equal to a clean
 * single-node run.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { HistoryJson } from "../../../src/console/history.js";
import { type DaemonProcess, startDaemon, until } from "../../helpers/daemon.js";
import { mirrorContents } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { setDefaults } from "../../helpers/replicas.js";
import { triggerPosts } from "../../helpers/requests.js";
import { createTwins, type Twins } from "../../helpers/twins.js";
import { buildOnce, EVERY_SECOND, NEVER } from "../daemon/setup.js";

const available = process.env.SYNCMIRROR_POSTGRES_AVAILABLE === "1";
const EXPORT = "GET /sync-task/{sync_id}/export";

let twins: Twins | undefined;
const harnesses: Harness[] = [];
const daemons: DaemonProcess[] = [];
beforeAll(buildOnce);
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.stop("SIGKILL");
  await twins?.close();
  twins = undefined;
  for (const h of harnesses.splice(0)) await h.close();
});

/** A replica once ready: alive on the database, so a `trigger` sent next leaves its pass to the replicas. */
/** `hostname:pid`, as the daemon names itself, from its own log lines. */
function replicaName(d: DaemonProcess): string {
  const line = d.logs()[0];
  return `${String(line?.hostname)}:${String(line?.pid)}`;
}

async function replica(h: Harness, env: Record<string, string> = {}): Promise<DaemonProcess> {
  const d = await startDaemon(h, env);
  daemons.push(d);
  await until(async () => (await d.get("/readyz")).status === 200, "the replica ready", 30_000);
  return d;
}

interface TriggerSpan {
  trigger_id: string | null;
  state: string;
  intent_at: string;
  finished_at: string | null;
  due_at: string | null;
}

describe.skipIf(!available)("replicas on one PostgreSQL database", () => {
  it("runs each scheduled time on exactly one replica and never two passes of a mirror at once", async () => {
    const h = await createHarness({ dialect: "postgres", sim: { docs: 40 } });
    harnesses.push(h);
    setDefaults(h, { incremental_cron: EVERY_SECOND, full_cron: NEVER });
    const replicas = [await replica(h), await replica(h), await replica(h)];
    await until(
      () => h.query("SELECT 1 FROM triggers WHERE state = 'done'").length >= 4,
      "four finished triggers",
      45_000,
    );
    for (const d of replicas) await d.stop("SIGTERM");
    daemons.length = 0;

    const triggers = h.query<TriggerSpan>(
      "SELECT trigger_id, state, intent_at, finished_at, due_at FROM triggers ORDER BY id",
    );
    const posted = triggerPosts(h);
    expect(posted, "every trigger row is one POST upstream").toBe(
      triggers.filter((t) => t.trigger_id !== null).length,
    );
    expect(new Set(triggers.map((t) => t.trigger_id)).size).toBe(triggers.length);
    for (let i = 1; i < triggers.length; i++) {
      const before = triggers[i - 1] as TriggerSpan;
      const after = triggers[i] as TriggerSpan;
      expect(before.finished_at, "the earlier pass had ended").not.toBeNull();
      expect(Date.parse(after.intent_at)).toBeGreaterThanOrEqual(Date.parse(before.finished_at as string));
    }
    const served = triggers.map((t) => t.due_at);
    expect(served.every((at) => at !== null)).toBe(true);
    expect(new Set(served).size, "no scheduled time ran twice").toBe(served.length);
  });

  it("hands a replica's pass stopped by SIGTERM mid-export to another at once, long before its lease runs out", async () => {
    const h = await createHarness({
      dialect: "postgres",
      sim: { docs: 300, users: 1 },
      export: { page_size: 20 },
    });
    harnesses.push(h);
    // A lease far longer than this test waits: only its release lets the other replica in.
    setDefaults(h, { incremental_cron: NEVER, full_cron: NEVER }, { lease_seconds: 3600 });
    h.sim.faults.inject(EXPORT, { kind: "delay", ms: 600, times: Number.POSITIVE_INFINITY });
    const pair = [await replica(h), await replica(h)];
    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(
      () => h.query("SELECT 1 FROM runs WHERE upserted >= 40 AND ingest <> 'done'").length === 1,
      "a pass that committed two pages and has more to come",
      30_000,
    );
    const holder = await until(
      () => pair.find((d) => d.logs().some((l) => l.msg === "triggered")),
      "the holder's log line saying it triggered",
    );
    const other = pair.find((d) => d !== holder) as DaemonProcess;
    const stopped = await holder.stop("SIGTERM");
    expect(stopped.code, holder.stderr()).toBe(0);
    h.sim.faults.clear();
    await until(
      () => h.query("SELECT 1 FROM triggers WHERE state = 'done'").length === 1,
      "the stopped replica's trigger finished by the other",
      30_000,
    );
    expect(other.logs().some((l) => l.msg === "resuming the trigger left in flight")).toBe(true);
    expect(triggerPosts(h), "no second trigger POST").toBe(1);

    const history = await h.cli(["history", "--mirror", "main", "--json"]);
    expect(history.code, history.stderr).toBe(0);
    const [pass] = (JSON.parse(history.stdout) as HistoryJson).passes;
    expect(pass?.resumed).toBe(true);
    expect(pass?.replica?.name, "the history names the replica that started the pass").toBe(
      replicaName(holder),
    );
    expect(pass?.finished_by?.name, "and the one that finished it").toBe(replicaName(other));
  });

  it("finishes the trigger of a replica killed mid-export on another, with one POST, equal to a clean run", async () => {
    twins = await createTwins({ dialect: "postgres", sim: { docs: 1000 } });
    const { clean, hurt } = twins;
    const reference = await clean.sync();
    expect(reference.outcome, reference.message).toBe("succeeded");

    setDefaults(hurt, { incremental_cron: EVERY_SECOND, full_cron: NEVER }, { lease_seconds: 5 });
    // Not waited for ready: it may be killed at its crash point before a look would see it.
    const doomed = await startDaemon(hurt, { SYNCMIRROR_CRASH_AT: "between-pages:2" });
    const died = await doomed.exited;
    daemons.length = 0;
    expect(died.signal, `the replica was killed between two pages; stderr: ${doomed.stderr()}`).toBe(
      "SIGKILL",
    );
    expect(triggerPosts(hurt)).toBe(1);
    const killedAt = Date.now();

    setDefaults(hurt, { incremental_cron: NEVER, full_cron: NEVER });
    const survivors = [await replica(hurt), await replica(hurt)];
    await until(
      () => hurt.query("SELECT 1 FROM triggers WHERE state = 'done'").length === 1,
      "the orphaned trigger finished by a survivor",
      60_000,
    );
    const failoverMs = Date.now() - killedAt;
    const resumedBy = survivors.filter((d) =>
      d.logs().some((l) => l.msg === "resuming the trigger left in flight"),
    );
    expect(resumedBy, "exactly one survivor resumed it").toHaveLength(1);
    expect(triggerPosts(hurt), "no second trigger POST").toBe(1);
    expect(mirrorContents(hurt)).toEqual(mirrorContents(clean));
    const resumedLine = resumedBy[0]?.logs().find((l) => l.msg === "resuming the trigger left in flight");
    const resumedMs = Date.parse(String(resumedLine?.time)) - killedAt;
    console.info(
      `failover (lease_seconds 5): resumed ${resumedMs} ms, finished ${failoverMs} ms after the kill`,
    );
  });
});
