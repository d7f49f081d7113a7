/**
 * Scheduled times falling while a mirror's pass runs elsewhere (SPEC "Scheduling"), on PostgreSQL
 * with real processes: two replicas record the times, one runs the pass; the time falling during it
 * is coalesced into one pass after it, counted once as `in_flight` over the replicas; a one-shot
 * `sync` holding the mirror is such a pass too.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type CliProcess, type DaemonProcess, spawnCli, startDaemon, until } from "../../helpers/daemon.js";
import { createHarness, DATABASE_URL_ENV, type Harness } from "../../helpers/mirror-harness.js";
import { postgresForTests } from "../../helpers/postgres.js";
import { setDefaults, useMirrors } from "../../helpers/replicas.js";
import { triggerPosts } from "../../helpers/requests.js";
import { type CuttableProxy, startCuttableProxy } from "../../helpers/tcp-proxy.js";
import { buildOnce, editConfig, NEVER, twoTimesSoon } from "../daemon/setup.js";

const available = await postgresForTests();

let h: Harness | undefined;
let proxy: CuttableProxy | undefined;
const processes: CliProcess[] = [];
beforeAll(buildOnce);
afterEach(async () => {
  for (const p of processes.splice(0)) await p.stop("SIGKILL");
  await proxy?.close();
  await h?.close();
  h = proxy = undefined;
});

async function replica(harness: Harness, env: Record<string, string> = {}): Promise<DaemonProcess> {
  const d = await startDaemon(harness, env);
  processes.push(d);
  await until(async () => (await d.get("/readyz")).status === 200, "the replica ready", 30_000);
  return d;
}

interface TriggerRow {
  mode: string;
  state: string;
  due_at: string | null;
  due_reason: string | null;
  started_by: string | null;
}

const triggers = (harness: Harness) =>
  harness.query<TriggerRow>("SELECT mode, state, due_at, due_reason, started_by FROM triggers ORDER BY id");

const dueMode = (harness: Harness) =>
  harness.query<{ due_mode: string | null }>("SELECT due_mode FROM schedules WHERE mirror = 'main'")[0]
    ?.due_mode;

async function skipped(replicas: DaemonProcess[], reason: string): Promise<number> {
  let sum = 0;
  for (const d of replicas)
    sum += await d.metric("syncmirror_ticks_skipped_total", { mirror: "main", reason });
  return sum;
}

describe.skipIf(!available)("scheduled times falling while the mirror's pass runs", () => {
  it("two replicas: the time falling during the pass is one pass after it, counted once as in_flight", async () => {
    h = await createHarness({ dialect: "postgres", sim: { docs: 20 } });
    const harness = h;
    const soon = twoTimesSoon(6000, 2);
    setDefaults(h, { incremental_cron: NEVER, full_cron: soon.cron }, { lease_seconds: 5 });
    const replicas = [await replica(h), await replica(h)];
    h.sim.runs.hold();
    await until(() => triggerPosts(harness) === 1, "the first time's pass posted", 20_000);
    await until(
      async () => (await skipped(replicas, "in_flight")) >= 1 && Date.now() > soon.last.getTime() + 1500,
      "the second time to fall while the pass runs",
      20_000,
    );
    expect(triggers(h), "no second pass while the first runs").toHaveLength(1);
    h.sim.runs.release();
    await until(
      () => triggers(harness).filter((t) => t.state === "done").length === 2 && dueMode(harness) == null,
      "the running pass and the one coalesced after it",
      30_000,
    );
    const [first, coalesced, ...more] = triggers(h);
    expect(more).toEqual([]);
    expect(first).toMatchObject({ mode: "full", due_at: soon.first.toISOString(), due_reason: "schedule" });
    expect(coalesced).toMatchObject({
      mode: "full",
      due_at: soon.last.toISOString(),
      due_reason: "schedule",
    });
    expect(triggerPosts(h)).toBe(2);
    expect(await skipped(replicas, "in_flight"), "the time counted once over both replicas").toBe(1);
    expect(await skipped(replicas, "waiting")).toBe(0);
    expect(await skipped(replicas, "paused")).toBe(0);
  });

  it("a one-shot sync holding the mirror: the scheduled times falling during it run once after it, on the replica", async () => {
    h = await createHarness({ dialect: "postgres", sim: { docs: 20 } });
    const harness = h;
    setDefaults(h, { incremental_cron: NEVER, full_cron: NEVER }, { lease_seconds: 5 });
    expect((await h.cli(["sync"])).code, "a first pass: the next sync is an incremental").toBe(0);
    const soon = twoTimesSoon(8000, 2);
    setDefaults(h, { full_cron: soon.cron });
    const d = await replica(h);
    h.sim.runs.hold();
    const sync = spawnCli(["sync", "--config", h.configPath], h.env);
    processes.push(sync);
    await until(() => triggerPosts(harness) === 2, "the one-shot sync's trigger posted", 20_000);
    expect(Date.now(), "the sync holds the mirror before the first time falls").toBeLessThan(
      soon.first.getTime(),
    );
    await until(
      async () => (await skipped([d], "in_flight")) >= 1 && Date.now() > soon.last.getTime() + 1500,
      "both times to fall while the sync holds the mirror",
      20_000,
    );
    expect(triggers(h), "nothing started beside the sync").toHaveLength(2);
    h.sim.runs.release();
    expect((await sync.exited).code, sync.stderr()).toBe(0);
    await until(
      () => triggers(harness).filter((t) => t.state === "done").length === 3 && dueMode(harness) == null,
      "one scheduled pass after the sync",
      30_000,
    );
    // Due since the first time that fell during the sync; the second is coalesced into it.
    const after = triggers(h)[2];
    expect(after).toMatchObject({ mode: "full", due_at: soon.first.toISOString(), due_reason: "schedule" });
    expect(triggerPosts(h)).toBe(3);
    expect(await skipped([d], "in_flight")).toBe(2);
  });

  it("a replica paused across several times and thawed: each time ran once, never two passes of the mirror at once", async () => {
    h = await createHarness({ dialect: "postgres", sim: { docs: 20 } });
    const harness = h;
    setDefaults(h, { incremental_cron: "*/2 * * * * *", full_cron: NEVER }, { lease_seconds: 2 });
    const replicas = [await replica(h), await replica(h)];
    const done = () => triggers(harness).filter((t) => t.state === "done").length;
    await until(() => done() >= 2, "passes on schedule", 30_000);
    const [a] = replicas as [DaemonProcess, DaemonProcess];
    const aPid = a.child.pid as number;
    process.kill(aPid, "SIGSTOP");
    try {
      const stoppedAt = done();
      await until(() => done() >= stoppedAt + 3, "the other replica to run the times meanwhile", 60_000);
    } finally {
      process.kill(aPid, "SIGCONT");
    }
    const thawedAt = done();
    await until(() => done() >= thawedAt + 3, "both replicas scheduling again", 60_000);
    for (const d of replicas) expect((await d.stop("SIGTERM")).code).toBe(0);

    const rows = h.query<{
      due_at: string | null;
      intent_at: string;
      finished_at: string | null;
      trigger_id: string | null;
    }>("SELECT due_at, intent_at, finished_at, trigger_id FROM triggers ORDER BY id");
    const served = rows.flatMap((t) => (t.due_at ? [t.due_at] : []));
    expect(new Set(served).size, "a scheduled time ran twice").toBe(served.length);
    for (let i = 1; i < rows.length; i++) {
      const prev = rows[i - 1] as (typeof rows)[number];
      expect(prev.finished_at, "a pass started before the previous one of the mirror ended").not.toBeNull();
      expect(Date.parse(prev.finished_at as string)).toBeLessThanOrEqual(
        Date.parse((rows[i] as (typeof rows)[number]).intent_at),
      );
    }
    const known = rows.flatMap((t) => (t.trigger_id ? [t.trigger_id] : []));
    expect(triggerPosts(h), "one POST per trigger").toBe(new Set(known).size);
  });

  it("times a replica could not record (database cut off) that another ran are not run again once it reconnects", async () => {
    h = await createHarness({ dialect: "postgres", sim: { docs: 20 } });
    const harness = h;
    const soon = twoTimesSoon(6000, 3);
    setDefaults(h, { incremental_cron: NEVER, full_cron: soon.cron }, { lease_seconds: 2 });
    proxy = await startCuttableProxy(h.databaseUrl as string);
    const network = proxy;
    const cutOff = await replica(h, { [DATABASE_URL_ENV]: proxy.url });
    const connected = await replica(h);
    await network.cut();
    await until(
      async () => (await cutOff.metric("syncmirror_ticks_skipped_total", { reason: "db_unreachable" })) >= 2,
      "both times counted as db_unreachable on the cut-off replica",
      30_000,
    );
    await until(
      () => triggers(harness).filter((t) => t.state === "done").length === 2,
      "both times run by the connected replica",
      30_000,
    );
    await network.restore();
    await until(
      async () => (await cutOff.get("/readyz")).status === 200,
      "the cut-off replica ready again",
      30_000,
    );
    // A pass asked for now, taken by either: once it ends, the reconnected replica has looked again.
    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(
      () => triggers(harness).filter((t) => t.state === "done").length >= 3 && dueMode(harness) == null,
      "the asked-for pass",
      30_000,
    );
    await until(
      async () =>
        (await cutOff.metric("syncmirror_mirror_held", { mirror: "main" })) === 0 &&
        (await connected.metric("syncmirror_mirror_held", { mirror: "main" })) === 0,
      "no pass running",
    );
    const rows = triggers(h);
    expect(rows.map((t) => [t.due_at, t.due_reason])).toEqual([
      [soon.first.toISOString(), "schedule"],
      [soon.last.toISOString(), "schedule"],
      [expect.any(String), "requested"],
    ]);
    expect(triggerPosts(h)).toBe(3);
    expect(await connected.metric("syncmirror_ticks_skipped_total", { reason: "db_unreachable" })).toBe(0);
  });

  it("every slot busy: a mirror's time waits due for one, counted as waiting once over the replicas, and runs once", async () => {
    h = await createHarness({ dialect: "postgres", sim: { docs: 10 } });
    const harness = h;
    const names = useMirrors(h, 3);
    const soon = twoTimesSoon(7000, 3);
    setDefaults(h, { incremental_cron: NEVER, full_cron: soon.cron }, { lease_seconds: 5 });
    editConfig(h, (config) => {
      config.max_concurrent_mirrors = 1;
    });
    const replicas = [await replica(h), await replica(h)];
    h.sim.runs.hold();
    const sum = async (name: string, labels: Record<string, string>) => {
      let total = 0;
      for (const d of replicas) total += await d.metric(name, labels);
      return total;
    };
    await until(
      async () =>
        Date.now() > soon.last.getTime() + 1500 &&
        (await sum("syncmirror_ticks_skipped_total", { reason: "waiting" })) >= 1,
      "the second time to fall with every slot busy",
      30_000,
    );
    expect(triggerPosts(h), "one pass per slot").toBe(2);
    h.sim.runs.release();
    await until(
      () =>
        harness.query("SELECT 1 FROM triggers WHERE state = 'done'").length === 5 &&
        harness.query("SELECT 1 FROM schedules WHERE due_mode IS NOT NULL").length === 0,
      "every due pass run",
      60_000,
    );
    const passes = h.query<{ mirror: string; n: number }>(
      "SELECT mirror, count(*)::int AS n FROM triggers GROUP BY mirror ORDER BY mirror",
    );
    // The two running at the first time run again for the second; the one that waited runs once for both.
    const waited = passes.find((p) => p.n === 1)?.mirror;
    expect(passes.map((p) => p.n).sort()).toEqual([1, 2, 2]);
    expect(names).toContain(waited);
    expect(triggerPosts(h)).toBe(5);
    expect(await sum("syncmirror_ticks_skipped_total", { reason: "waiting" })).toBe(1);
    expect(await sum("syncmirror_ticks_skipped_total", { reason: "in_flight" })).toBe(2);
  });
});
