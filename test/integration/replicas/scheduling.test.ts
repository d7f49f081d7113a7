/**
 * Due-time scheduling across replicas on one PostgreSQL database (docs/scaling-out.md#scheduling, issue 22 item
 * 2, issue 24 item 3): due passes a killed replica leaves run once each on another; its trigger in
 * flight is resumed by a replica whose slots are all busy; replicas fill their slots before any pass waits; a control given to one replica is obeyed by another; a tick
 * the database cannot record is counted as `db_unreachable` and caught up once it answers.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type DaemonProcess, startDaemon, until } from "../../helpers/daemon.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { nodePid, pidOneWrapper, replicaConfig, setDefaults, useMirrors } from "../../helpers/replicas.js";
import { triggerPosts } from "../../helpers/requests.js";
import { type CuttableProxy, startCuttableProxy } from "../../helpers/tcp-proxy.js";
import { buildOnce, EVERY_SECOND, editConfig, NEVER } from "../daemon/setup.js";

const available = process.env.SYNCMIRROR_POSTGRES_AVAILABLE === "1";
const HTTP_TOKEN = "replica-controls-7d2a";

let h: Harness | undefined;
let proxy: CuttableProxy | undefined;
const daemons: DaemonProcess[] = [];
beforeAll(buildOnce);
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.stop("SIGKILL");
  await proxy?.close();
  await h?.close();
  h = proxy = undefined;
});

async function replica(
  harness: Harness,
  options: { configPath?: string; env?: Record<string, string>; wrap?: readonly string[] | null } = {},
): Promise<DaemonProcess & { id: string }> {
  const { wrap, ...rest } = options;
  const d = await startDaemon(
    harness,
    { SYNCMIRROR_HTTP_TOKEN: HTTP_TOKEN, ...options.env },
    { ...rest, ...(wrap ? { wrap } : {}) },
  );
  daemons.push(d);
  const started = await until(() => d.logs().find((l) => l.msg === "daemon started"), "the daemon to start");
  return Object.assign(d, { id: String(started.instance_id) });
}

interface TriggerRow {
  id: number;
  mirror: string;
  trigger_id: string | null;
  state: string;
  intent_at: string;
  finished_at: string | null;
  due_at: string | null;
  due_reason: string | null;
  started_by: string | null;
}

const triggers = (harness: Harness) =>
  harness.query<TriggerRow>(
    `SELECT id, mirror, trigger_id, state, intent_at, finished_at, due_at, due_reason, started_by
     FROM triggers ORDER BY id`,
  );
const dues = (harness: Harness) =>
  harness.query<{ mirror: string; due_at: string | null }>(
    "SELECT mirror, due_at FROM schedules ORDER BY mirror",
  );

/**
 * No due pass ran twice, and every trigger upstream is one trigger row: known by its id, or an
 * intent whose POST's answer the stop cut off (the next start adopts it from the run list).
 */
function expectEachDueOnce(harness: Harness): void {
  const rows = triggers(harness);
  const served = rows.filter((t) => t.due_at !== null).map((t) => `${t.mirror} ${t.due_at}`);
  expect(new Set(served).size, "a due pass ran twice").toBe(served.length);
  const known = rows.flatMap((t) => (t.trigger_id ? [t.trigger_id] : []));
  expect(new Set(known).size).toBe(known.length);
  const upstream = new Set(harness.sim.runs.list().map((r) => r.trigger_id));
  expect(known.filter((id) => !upstream.has(id))).toEqual([]);
  const unknown = [...upstream].filter((id) => !known.includes(id));
  expect(unknown.length, "a trigger POSTed upstream with no row").toBeLessThanOrEqual(
    rows.filter((t) => t.state === "intent").length,
  );
  expect(triggerPosts(harness)).toBe(upstream.size);
}

async function stopAll(): Promise<void> {
  for (const d of daemons.splice(0)) await d.stop("SIGTERM");
}

describe.skipIf(!available)("due-time scheduling across replicas", () => {
  it("runs the passes due on a replica killed with kill -9 once each on another, within lease + poll", async () => {
    h = await createHarness({ dialect: "postgres", sim: { docs: 40 } });
    const harness = h;
    const mirrors = useMirrors(h, 2);
    setDefaults(h, { incremental_cron: "*/2 * * * * *", full_cron: NEVER }, { lease_seconds: 5 });
    h.sim.runs.hold();
    const doomed = await replica(h);
    await until(() => triggers(harness).length === 2, "both mirrors' passes running on the first replica");
    // Ticks falling while they run leave a pass due after each.
    await until(() => dues(harness).every((d) => d.due_at !== null), "a pass due on each mirror");
    const survivor = await replica(h);
    await until(async () => (await survivor.get("/readyz")).status === 200, "the second replica ready");
    expect(triggers(h).every((t) => t.started_by === doomed.id)).toBe(true);
    const waiting = dues(h);

    doomed.child.kill("SIGKILL");
    await doomed.exited;
    const killedAt = Date.now();
    h.sim.runs.release();
    await until(
      () =>
        waiting.every((w) =>
          triggers(harness).some(
            (t) =>
              t.mirror === w.mirror &&
              t.due_at === w.due_at &&
              t.state === "done" &&
              t.started_by === survivor.id,
          ),
        ),
      "each waiting pass run by the survivor",
      60_000,
    );
    const firstOwn = triggers(h).find((t) => t.started_by === survivor.id);
    const resumed = survivor.logs().filter((l) => l.msg === "resuming the trigger left in flight");
    expect(
      resumed.map((l) => l.mirror).sort(),
      "the dead replica's triggers resumed, not POSTed again",
    ).toEqual(mirrors);
    for (const d of daemons.splice(0)) await d.stop("SIGTERM");
    expectEachDueOnce(h);
    expect(
      triggers(h)
        .filter((t) => t.started_by === doomed.id)
        .every((t) => t.state === "done"),
    ).toBe(true);
    const resumedMs = Math.min(...resumed.map((l) => Date.parse(String(l.time)))) - killedAt;
    const dueMs = Date.parse(firstOwn?.intent_at ?? "") - killedAt;
    console.info(
      `kill -9 with passes due (lease_seconds 5, poll 250 ms): in-flight triggers resumed ${resumedMs} ms, first due pass started ${dueMs} ms after the kill`,
    );
  });

  it("resumes a killed replica's trigger in flight on a replica whose only slot is busy, with no second POST", async () => {
    h = await createHarness({ dialect: "postgres", sim: { docs: 20 } });
    const harness = h;
    const mirrors = useMirrors(h, 2);
    // Short: the wrapped replica's death is seen only once its lease expires.
    setDefaults(h, { incremental_cron: NEVER, full_cron: NEVER }, { lease_seconds: 2 });
    editConfig(h, (config) => {
      config.max_concurrent_mirrors = 1;
    });
    h.sim.runs.hold();
    const survivor = await replica(h);
    for (const m of mirrors) expect((await h.cli(["trigger", "--mirror", m])).code).toBe(0);
    await until(() => triggers(harness).length === 1, "the first replica's one slot busy");
    // In a pid namespace of its own where the host allows it: its death is then seen, as from
    // another host, only when its lease expires.
    const wrap = pidOneWrapper();
    const doomed = await replica(h, { wrap });
    await until(() => triggers(harness).length === 2, "the second replica's one slot busy");
    const own = triggers(h).find((t) => t.started_by === survivor.id) as TriggerRow;
    const orphan = triggers(h).find((t) => t.started_by === doomed.id) as TriggerRow;
    expect(orphan, "one pass on each replica").toBeDefined();

    process.kill(nodePid(doomed, wrap !== null), "SIGKILL");
    await doomed.exited;
    await until(
      () =>
        survivor
          .logs()
          .find((l) => l.msg === "resuming the trigger left in flight" && l.mirror === orphan.mirror),
      "the dead replica's trigger resumed by the busy survivor",
    );
    const running = triggers(h).find((t) => t.id === own.id);
    expect(running?.state, "the survivor's own pass still runs").not.toBe("done");
    await until(async () => {
      const status = await fetch(`http://127.0.0.1:${survivor.port}/status`, {
        headers: { Authorization: `Bearer ${HTTP_TOKEN}` },
      });
      const { replicas } = (await status.json()) as {
        replicas: { instance_id: string; slots: number; running: number }[];
      };
      const self = replicas.find((r) => r.instance_id === survivor.id);
      return self?.slots === 1 && self.running === 2;
    }, "the survivor's heartbeat: one pass beyond its slot while it resumes");

    h.sim.runs.release();
    await until(() => triggers(harness).every((t) => t.state === "done"), "both passes done", 30_000);
    await stopAll();
    expect(triggers(h).map((t) => [t.mirror, t.started_by, t.state])).toEqual(
      expect.arrayContaining([
        [own.mirror, survivor.id, "done"],
        [orphan.mirror, doomed.id, "done"],
      ]),
    );
    expect(triggers(h), "the resumed trigger was not started again").toHaveLength(2);
    expect(triggerPosts(h)).toBe(2);
    expectEachDueOnce(h);
  });

  it.each(["before-intent", "after-intent"])(
    "runs once, on another replica, a due pass whose replica died holding it (%s)",
    async (point) => {
      h = await createHarness({ dialect: "postgres", sim: { docs: 20 } });
      const harness = h;
      setDefaults(h, { incremental_cron: NEVER, full_cron: NEVER }, { lease_seconds: 5 });
      const doomed = await replica(h, { env: { SYNCMIRROR_CRASH_AT: point } });
      expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
      const died = await doomed.exited;
      const diedAt = Date.now();
      expect(died.signal, doomed.stderr()).toBe("SIGKILL");
      const survivor = await replica(h);
      await until(
        () => triggers(harness).some((t) => t.state === "done"),
        "the pass, run by the survivor",
        30_000,
      );
      await stopAll();
      const rows = triggers(h);
      expect(rows, "one pass, not lost, not run twice").toHaveLength(1);
      expect(rows[0]).toMatchObject({ due_reason: "requested", state: "done" });
      expect(rows[0]?.started_by).toBe(point === "before-intent" ? survivor.id : doomed.id);
      expect(triggerPosts(h)).toBe(1);
      expect(h.query("SELECT due_mode FROM schedules")).toEqual([{ due_mode: null }]);
      const took = survivor
        .logs()
        .find((l) => String(l.msg).startsWith("took over the lease of mirror main"));
      console.info(
        `a due pass held by a replica killed at ${point} (lease_seconds 5, poll 250 ms): taken over ${Date.parse(String(took?.time)) - diedAt} ms after the death`,
      );
    },
  );

  it("3 replicas x 6 mirrors x 2 slots: every replica runs two passes before any pass waits", async () => {
    h = await createHarness({ dialect: "postgres", sim: { docs: 20 } });
    const harness = h;
    useMirrors(h, 6);
    setDefaults(h, { incremental_cron: "*/2 * * * * *", full_cron: NEVER });
    h.sim.runs.hold();
    const replicas = [await replica(h), await replica(h), await replica(h)];
    await until(() => triggers(harness).length === 6, "six passes running", 30_000);
    await until(() => dues(harness).every((d) => d.due_at !== null), "a pass waiting on every mirror");
    const held = triggers(h);
    const perReplica = replicas.map((r) => held.filter((t) => t.started_by === r.id).length);
    expect(perReplica, "while six passes wait, no replica has a free slot").toEqual([2, 2, 2]);
    const waiting = dues(h);

    h.sim.runs.release();
    await until(
      () =>
        waiting.every((w) => triggers(harness).some((t) => t.mirror === w.mirror && t.due_at === w.due_at)),
      "every waiting pass started",
      30_000,
    );
    await stopAll();
    expectEachDueOnce(h);
    // A replica starts a waiting pass only once one of its own two passes has ended.
    for (const w of waiting) {
      const late = triggers(h).find((t) => t.mirror === w.mirror && t.due_at === w.due_at) as TriggerRow;
      const ownEnded = held.map((t) => triggers(harness).find((x) => x.id === t.id) as TriggerRow);
      expect(
        ownEnded.some(
          (t) =>
            t.started_by === late.started_by && t.finished_at !== null && t.finished_at <= late.intent_at,
        ),
        `${w.mirror}'s waiting pass started in a slot freed on its replica`,
      ).toBe(true);
    }
  });

  it("obeys on one replica a pause given over HTTP to another; resume and trigger from the CLI", async () => {
    h = await createHarness({ dialect: "postgres", sim: { docs: 20 } });
    const harness = h;
    setDefaults(h, { incremental_cron: NEVER, full_cron: NEVER });
    const quiet = await replica(h);
    const ticking = await replica(h, {
      configPath: replicaConfig(h, "ticking", (c) => {
        c.defaults = { ...(c.defaults as object), incremental_cron: EVERY_SECOND };
      }),
    });
    await until(() => triggers(harness).some((t) => t.state === "done"), "a scheduled pass");
    const unauthorized = await fetch(`http://127.0.0.1:${quiet.port}/v1/mirrors/main/pause`, {
      method: "POST",
    });
    expect(unauthorized.status, "no token, even on loopback").toBe(401);
    const paused = await fetch(`http://127.0.0.1:${quiet.port}/v1/mirrors/main/pause`, {
      method: "POST",
      headers: { Authorization: `Bearer ${HTTP_TOKEN}` },
    });
    expect(paused.status).toBe(200);
    const { at } = (await paused.json()) as { at: string };
    await until(
      async () =>
        (await ticking.metric("syncmirror_ticks_skipped_total", { mirror: "main", reason: "paused" })) >= 2,
      "the other replica skipping its ticks as paused",
    );
    expect(await ticking.metric("syncmirror_mirror_paused", { mirror: "main" })).toBe(1);
    await until(
      () => triggers(harness).every((t) => t.state === "done"),
      "a pass running at the pause to finish",
    );
    expect(
      triggers(h).filter((t) => (t.due_at ?? "") > at),
      "no time falling after the pause made a pass due",
    ).toEqual([]);

    expect((await h.cli(["resume", "--mirror", "main"])).code).toBe(0);
    await until(() => triggers(harness).some((t) => t.intent_at > at), "a scheduled pass after resume");
    const asked = await h.cli(["trigger", "--mirror", "main", "--full"]);
    expect(asked.code).toBe(0);
    expect(asked.stdout).toContain("Daemons alive:");
    await until(
      () => triggers(harness).some((t) => t.due_reason === "requested" && t.state === "done"),
      "the requested full taken by a daemon",
    );
    const requested = triggers(h).find((t) => t.due_reason === "requested");
    expect([quiet.id, ticking.id]).toContain(requested?.started_by);
    await stopAll();
    expectEachDueOnce(h);
  });

  it("counts a tick the database cannot be reached for as db_unreachable, and schedules again when it answers", async () => {
    h = await createHarness({ dialect: "postgres", sim: { docs: 20 } });
    const harness = h;
    setDefaults(h, { incremental_cron: EVERY_SECOND, full_cron: NEVER });
    proxy = await startCuttableProxy(h.databaseUrl as string);
    const cutOff = proxy;
    const d = await replica(h, { env: { SYNCMIRROR_TEST_MIRROR_DATABASE_URL: proxy.url } });
    await until(() => triggers(harness).some((t) => t.state === "done"), "a first pass");
    await cutOff.cut();
    await until(
      async () => (await d.metric("syncmirror_ticks_skipped_total", { reason: "db_unreachable" })) >= 1,
      "a tick counted as db_unreachable",
    );
    await until(async () => (await d.get("/readyz")).status === 503, "not ready while cut off");
    expect(await d.metric("syncmirror_ticks_skipped_total", { reason: "waiting" })).toBe(0);
    await cutOff.restore();
    const restoredAt = new Date().toISOString();
    await until(async () => (await d.get("/readyz")).status === 200, "ready again");
    await until(
      () => triggers(harness).some((t) => t.intent_at > restoredAt && t.state === "done"),
      "a scheduled pass once the database answers",
    );
  });
});
