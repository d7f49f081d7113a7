/**
 * The process's scheduler over a real store (in memory): a due pass starts only in a free slot,
 * what does not fit stays due in the database (not queued in memory) for the first slot that frees,
 * a trigger left in flight comes before due passes (one of them resumed beyond busy slots), and
 * stop aborts the passes and waits for them.
 */
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import type { MirrorConfig } from "../../src/config.js";
import { silentLogger } from "../../src/log.js";
import { createMetrics } from "../../src/metrics.js";
import { createScheduler, type Scheduler } from "../../src/scheduler.js";
import { openEmptyStore } from "../../src/store/open-store.js";
import { consumeDue, newSchedule, requestPass } from "../../src/store/schedule-rules.js";
import type { Store } from "../../src/store/store.js";
import { until } from "../helpers/daemon.js";

const NEVER = "0 0 3 1 1 *";
const T0 = "2026-03-10T10:00:00.000Z";
const mirror = (name: string) =>
  ({ name, incrementalCron: NEVER, fullCron: NEVER, timezone: "UTC" }) as MirrorConfig;

let store: Store | undefined;
let scheduler: Scheduler | undefined;
afterEach(async () => {
  await scheduler?.stop();
  await store?.close();
  scheduler = store = undefined;
});

async function makeDue(s: Store, name: string, since: string): Promise<void> {
  await s.schedules.save(
    requestPass(newSchedule(name, { incremental: T0, full: T0 }), "incremental", "test", since),
  );
}

/** A trigger left in flight by a process that is gone. */
async function leftInFlight(s: Store, name: string): Promise<void> {
  await s.triggers.createIntent({
    mirror: name,
    mode: "incremental",
    since: null,
    knownBefore: null,
    intentAt: T0,
    allowMassDelete: false,
    dryRun: false,
    startedBy: "dead",
    startedByName: "web-1:1",
    dueAt: null,
    dueReason: null,
  });
}

/**
 * Passes that consume their due (as a trigger's intent would, unless `resumeOnly`) and run until
 * released, finishing a trigger left in flight; `resumeOnly` lists the mirrors started only to
 * resume their trigger.
 */
function fakePasses(s: Store) {
  const started: string[] = [];
  const resumeOnly: string[] = [];
  const release = new Map<string, () => void>();
  const runPass = async (
    m: MirrorConfig,
    signal: AbortSignal,
    report: (running: boolean) => void,
    options: { resumeOnly: boolean },
  ) => {
    const schedule = await s.schedules.find(m.name);
    const taken = !options.resumeOnly && schedule && consumeDue(schedule, "full");
    if (!taken && !(await s.triggers.findInFlight(m.name))) return report(false);
    if (taken) await s.schedules.save(taken.schedule);
    started.push(m.name);
    if (options.resumeOnly) resumeOnly.push(m.name);
    report(true);
    await new Promise<void>((resolve) => {
      release.set(m.name, resolve);
      signal.addEventListener("abort", () => resolve(), { once: true });
    });
    const resumed = signal.aborted ? undefined : await s.triggers.findInFlight(m.name);
    if (resumed)
      await s.triggers.finish(resumed.id, { outcome: "succeeded", message: "", summary: {}, finishedAt: T0 });
  };
  return { started, resumeOnly, release, runPass };
}

function schedulerFor(
  s: Store,
  names: string[],
  max: number,
  runPass: ReturnType<typeof fakePasses>["runPass"],
  now?: () => Date,
) {
  scheduler = createScheduler({
    mirrors: names.map(mirror),
    maxConcurrentMirrors: max,
    store: s,
    holderId: "this-process",
    runPass,
    log: silentLogger(),
    metrics: createMetrics(new Registry(), { defaultMetrics: false }),
    now,
  });
  return scheduler;
}

describe("scheduler", () => {
  it("starts due passes while slots are free, oldest first; the rest stay due in the database until a slot frees", async () => {
    const s = await openEmptyStore();
    store = s;
    await makeDue(s, "a", "2026-03-10T10:00:03.000Z");
    await makeDue(s, "b", "2026-03-10T10:00:01.000Z");
    await makeDue(s, "c", "2026-03-10T10:00:02.000Z");
    const fake = fakePasses(s);
    const sched = schedulerFor(s, ["a", "b", "c"], 2, fake.runPass);
    await sched.start();
    expect(fake.started).toEqual(["b", "c"]);
    expect(sched.running()).toBe(2);
    expect((await s.schedules.find("a"))?.due, "still due, in the database").not.toBeNull();
    fake.release.get("c")?.();
    await until(() => fake.started.length === 3, "the waiting pass to start in the freed slot");
    expect(fake.started[2]).toBe("a");
    expect((await s.schedules.find("a"))?.due).toBeNull();
  });

  it("among passes due since the same time, starts first the mirror whose last pass ended longest ago", async () => {
    const s = await openEmptyStore();
    store = s;
    const ended = {
      a: "2026-03-10T09:59:00.000Z",
      b: "2026-03-10T09:57:00.000Z",
      c: "2026-03-10T09:58:00.000Z",
    };
    for (const [name, at] of Object.entries(ended)) {
      await s.mirrors.ensure(name, "cfg");
      await s.mirrors.recordOutcome(name, { mode: "incremental", outcome: "succeeded", message: "", at });
      await makeDue(s, name, "2026-03-10T10:00:00.000Z");
    }
    await makeDue(s, "never-ran", "2026-03-10T10:00:00.000Z");
    const fake = fakePasses(s);
    const sched = schedulerFor(s, ["a", "b", "c", "never-ran"], 1, fake.runPass);
    await sched.start();
    for (let i = 1; i < 4; i++) {
      fake.release.get(fake.started[i - 1] as string)?.();
      await until(() => fake.started.length === i + 1, "the next pass to start in the freed slot");
    }
    expect(fake.started).toEqual(["never-ran", "b", "c", "a"]);
  });

  it("resumes a trigger left in flight before it starts due passes", async () => {
    const s = await openEmptyStore();
    store = s;
    await makeDue(s, "a", "2026-03-10T09:00:00.000Z");
    await leftInFlight(s, "b");
    const fake = fakePasses(s);
    await schedulerFor(s, ["a", "b"], 1, fake.runPass).start();
    expect(fake.started).toEqual(["b"]);
  });

  it("resumes one trigger left in flight beyond its busy slots, only resuming it; due passes wait for a slot", async () => {
    const s = await openEmptyStore();
    store = s;
    await makeDue(s, "a", T0);
    for (const name of ["b", "c", "d"]) await leftInFlight(s, name);
    const fake = fakePasses(s);
    const sched = schedulerFor(s, ["a", "b", "c", "d"], 1, fake.runPass);
    await sched.start();
    expect(fake.started, "b in the slot, c beyond it, d and the due a not yet").toEqual(["b", "c"]);
    expect(fake.resumeOnly).toEqual(["c"]);
    expect(sched.running()).toBe(2);
    fake.release.get("c")?.();
    await until(() => fake.started.includes("d"), "the next trigger left in flight, beyond the busy slot");
    expect(fake.started).toEqual(["b", "c", "d"]);
    expect(fake.resumeOnly).toEqual(["c", "d"]);
    expect((await s.schedules.find("a"))?.due, "a due pass still waits for a slot").not.toBeNull();
    fake.release.get("b")?.();
    fake.release.get("d")?.();
    await until(() => fake.started.includes("a"), "the due pass, in the freed slot");
    expect(fake.resumeOnly).toEqual(["c", "d"]);
  });

  it("leaves a mirror whose lease another process holds to that process", async () => {
    const s = await openEmptyStore();
    store = s;
    await makeDue(s, "a", T0);
    await s.leases.acquire("a", { id: "other", name: "web-2:1", scope: null }, 60);
    const fake = fakePasses(s);
    const sched = schedulerFor(s, ["a"], 1, fake.runPass);
    await sched.start();
    expect(fake.started).toEqual([]);
    expect(sched.running()).toBe(0);
  });

  it("waits before taking again a mirror whose pass failed, its trigger still in flight; other mirrors go first", async () => {
    const s = await openEmptyStore();
    store = s;
    await leftInFlight(s, "a");
    await makeDue(s, "b", "2026-03-10T10:00:01.000Z");
    await makeDue(s, "c", "2026-03-10T10:00:02.000Z");
    const fake = fakePasses(s);
    let failures = 0;
    // The pass of `a` fails twice as a database error ends one: after it started, its trigger kept in flight.
    const runPass: typeof fake.runPass = async (m, signal, report, options) => {
      if (m.name !== "a" || failures === 2) return fake.runPass(m, signal, report, options);
      failures++;
      report(true);
      throw new Error("disk I/O error");
    };
    let clock = Date.parse("2026-03-10T11:00:00.000Z");
    const sched = schedulerFor(s, ["a", "b", "c", "d"], 1, runPass, () => new Date(clock));
    const nextStarts = async (name: string) => {
      await until(() => fake.started.includes(name), `${name} to start`);
      fake.release.get(name)?.();
    };
    await sched.start();
    // Each look that starts a due pass has passed over `a` first (a trigger in flight comes first).
    await nextStarts("b");
    await nextStarts("c");
    expect(failures, "a is left alone for 5 s").toBe(1);

    clock += 5_000;
    sched.wake();
    await until(() => failures === 2, "a to be taken again once its wait is over");
    await makeDue(s, "d", "2026-03-10T10:00:03.000Z");
    clock += 5_000;
    sched.wake();
    await nextStarts("d");
    expect(failures, "the wait doubles: a is left alone for 10 s after its second failure").toBe(2);

    clock += 5_000;
    sched.wake();
    await until(() => fake.started.includes("a"), "a to be resumed after the doubled wait");
    expect(fake.started).toEqual(["b", "c", "d", "a"]);
  });

  it("waits before taking again a mirror whose pass ended with its trigger in flight, as an upstream failure ends one", async () => {
    const s = await openEmptyStore();
    store = s;
    await leftInFlight(s, "a");
    await makeDue(s, "b", "2026-03-10T10:00:01.000Z");
    const fake = fakePasses(s);
    let passes = 0;
    // The pass of `a` settles as failed (a rejected token) and returns, its trigger kept in flight.
    const runPass: typeof fake.runPass = async (m, signal, report, options) => {
      if (m.name !== "a") return fake.runPass(m, signal, report, options);
      passes++;
      report(true);
    };
    let clock = Date.parse("2026-03-10T11:00:00.000Z");
    const sched = schedulerFor(s, ["a", "b"], 1, runPass, () => new Date(clock));
    await sched.start();
    await until(() => fake.started.includes("b"), "b to start");
    fake.release.get("b")?.();
    await until(() => sched.running() === 0, "b to end");
    sched.wake();
    await until(() => sched.running() === 0, "the next look");
    expect(passes, "a is left alone for 5 s").toBe(1);

    clock += 5_000;
    sched.wake();
    await until(() => passes === 2, "a to be taken again once its wait is over");
    clock += 5_000;
    sched.wake();
    await until(() => sched.running() === 0, "the next look");
    expect(passes, "the wait doubles while its passes keep ending in flight").toBe(2);
  });

  it("stop aborts the running passes and resolves once they end", async () => {
    const s = await openEmptyStore();
    store = s;
    await makeDue(s, "a", T0);
    const fake = fakePasses(s);
    const sched = schedulerFor(s, ["a"], 1, fake.runPass);
    await sched.start();
    expect(sched.running()).toBe(1);
    await sched.stop();
    expect(sched.running()).toBe(0);
  });
});
