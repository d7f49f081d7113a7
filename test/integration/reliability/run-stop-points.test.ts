/**
 * `syncmirror run` stopped by SIGTERM or SIGINT at named points of a pass (the crash seam with a
 * signal, docs/operations.md#restarts): it exits 0 logging no error, the work it had committed stays
 * (the page in progress commits whole), and the next start finishes the same trigger, with no
 * second trigger POST and no continue sent twice, to the state of a pass never stopped.
 */
import { afterEach, describe, expect, it } from "vitest";
import { type DaemonProcess, startDaemon, until } from "../../helpers/daemon.js";
import { databaseProblems, snapshot, snapshotDiff } from "../../helpers/db-snapshot.js";
import type { Harness } from "../../helpers/mirror-harness.js";
import { answered, triggerPosts } from "../../helpers/requests.js";
import { createTwins, type Twins } from "../../helpers/twins.js";
import { buildOnce, NEVER } from "../daemon/setup.js";

const CONTINUE = "POST /sync-task/{sync_id}/continue";

let twins: Twins | undefined;
const daemons: DaemonProcess[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.stop("SIGKILL");
  await twins?.close();
  twins = undefined;
});

async function daemon(h: Harness, env: Record<string, string> = {}): Promise<DaemonProcess> {
  const d = await startDaemon(h, env);
  daemons.push(d);
  await until(async () => (await d.get("/readyz")).status === 200, "/readyz 200");
  return d;
}

/** A full pass, then upstream changes a full sweep acts on: deleted documents and a leaver. */
async function baselineThenChanges(h: Harness): Promise<void> {
  expect((await h.sync()).outcome).toBe("succeeded");
  const docs = h.sim.docs.list().filter((d) => d.visibleTo.includes("user1@example.com"));
  for (const d of docs.slice(0, 3)) h.sim.docs.remove(d.docId);
  h.sim.people.leaveProject("user3@example.com");
}

interface StopCase {
  name: string;
  /** `<point>:<n>:<signal>` for SYNCMIRROR_CRASH_AT. */
  stopAt: string;
  sim: { docs: number; users?: number };
  full?: boolean;
  before?: (h: Harness) => Promise<void>;
  defaults?: Record<string, unknown>;
  /** Rows committed at the stop: the page in progress, whole. */
  committed?: number;
}

const CASES: StopCase[] = [
  {
    name: "with the trigger POST answered, its answer not stored yet",
    stopAt: "after-trigger-post:1:SIGTERM",
    sim: { docs: 60 },
  },
  // One user: the 700th row is in the third page of 250: that page commits whole before the stop.
  {
    name: "inside a page transaction",
    stopAt: "mid-page:700:SIGINT",
    sim: { docs: 1500, users: 1 },
    committed: 750,
  },
  {
    name: "between two runs' sweep transactions",
    stopAt: "mid-sweep:1:SIGTERM",
    sim: { docs: 60 },
    full: true,
    before: baselineThenChanges,
  },
  {
    name: "while continuing an INCOMPLETE source",
    stopAt: "during-continue:1:SIGINT",
    sim: { docs: 60 },
    before: async (h) => {
      h.sim.setOutcome({ user: "user1@example.com" }, { task: "INCOMPLETE", times: 1 });
    },
    defaults: { continue_incomplete: 1 },
  },
];

describe("syncmirror run stopped mid-pass, then started again", () => {
  it.each(CASES)("$name ($stopAt)", async (c) => {
    buildOnce();
    twins = await createTwins({
      sim: c.sim,
      defaults: { incremental_cron: NEVER, full_cron: NEVER, ...c.defaults },
    });
    const { clean, hurt } = twins;
    await c.before?.(clean);
    await c.before?.(hurt);
    const postsBefore = triggerPosts(hurt);
    const reference = await clean.sync({ full: c.full === true });
    expect(reference.outcome, reference.message).toBe("succeeded");

    const stopped = await daemon(hurt, { SYNCMIRROR_CRASH_AT: c.stopAt });
    const asked = await hurt.cli(["trigger", "--mirror", "main", ...(c.full ? ["--full"] : [])]);
    expect(asked.code, asked.stderr).toBe(0);
    expect(await stopped.exited, stopped.stderr()).toEqual({ code: 0, signal: null });
    const signal = c.stopAt.split(":")[2];
    expect(stopped.logs().find((l) => String(l.msg).startsWith("stopping"))?.reason).toBe(
      `${signal} received`,
    );
    expect(stopped.logs().filter((l) => Number(l.level) >= 50)).toEqual([]);
    expect(databaseProblems(hurt)).toEqual([]);
    if (c.committed !== undefined) {
      expect(hurt.query("SELECT next_offset FROM runs")).toEqual([{ next_offset: c.committed }]);
      expect(hurt.query("SELECT count(*) AS n FROM resources")).toEqual([{ n: c.committed }]);
    }

    const restarted = await daemon(hurt);
    await until(
      () => hurt.query("SELECT state FROM triggers WHERE due_reason = 'requested'")[0]?.state === "done",
      "the stopped pass finished by the next start",
    );
    expect((await restarted.stop()).code).toBe(0);
    expect(databaseProblems(hurt)).toEqual([]);
    expect(triggerPosts(hurt) - postsBefore, "one trigger POST for the pass").toBe(1);
    expect(answered(hurt, CONTINUE, 200), "each continue once").toBe(answered(clean, CONTINUE, 200));
    expect(snapshotDiff(snapshot(hurt), snapshot(clean))).toEqual([]);
  });
});
