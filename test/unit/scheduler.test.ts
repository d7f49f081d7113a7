import { createTask, getTasks, type ScheduledTask, type TaskContext, type TaskOptions } from "node-cron";
import { pino } from "pino";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import type { MirrorConfig } from "../../src/config.js";
import { AbortedError } from "../../src/errors.js";
import { createMetrics } from "../../src/metrics.js";
import { createScheduler, type ScheduleFn } from "../../src/scheduler.js";
import type { Mode } from "../../src/store/types.js";

function mirror(name: string, overrides: Partial<MirrorConfig> = {}): MirrorConfig {
  return {
    name,
    syncConfigId: `${name}-config`,
    declared: null,
    incrementalCron: "*/15 * * * *",
    fullCron: "0 3 * * *",
    timezone: "UTC",
    sinceOverlapSeconds: 300,
    pollInitialSeconds: 5,
    pollMaxSeconds: 60,
    runTimeoutMinutes: 240,
    continueIncomplete: 0,
    continueMessage: "Continue where you stopped and finish the task.",
    deleteAfterMissedFull: 1,
    maxDeleteFraction: 0.5,
    inaccessibleGraceHours: 72,
    ...overrides,
  };
}

interface Call {
  mirror: string;
  mode: Mode;
  signal: AbortSignal;
  finish: () => void;
  fail: (err: Error) => void;
}

interface Scheduled {
  expression: string;
  options: TaskOptions;
  fn: (context: TaskContext) => unknown;
  task: ScheduledTask;
}

/** A scheduler whose passes are deferred promises the test settles by hand. */
function harness(
  options: { mirrors?: MirrorConfig[]; max?: number; isInFlight?: (mirror: string) => boolean } = {},
) {
  const calls: Call[] = [];
  const scheduled: Scheduled[] = [];
  const metrics = createMetrics(new Registry(), { defaultMetrics: false });
  // The real node-cron task (for its time matching and registry), never started: no timers.
  const schedule: ScheduleFn = (expression, fn, taskOptions) => {
    const task = createTask(expression, fn, taskOptions);
    scheduled.push({ expression, options: taskOptions, fn, task });
    return task;
  };
  const scheduler = createScheduler({
    mirrors: options.mirrors ?? [mirror("a"), mirror("b"), mirror("c"), mirror("d")],
    maxConcurrentMirrors: options.max ?? 2,
    runPass: (m, mode, signal) =>
      new Promise<void>((resolve, reject) => {
        calls.push({ mirror: m.name, mode, signal, finish: resolve, fail: reject });
      }),
    isInFlight: options.isInFlight,
    log: pino({ level: "silent" }),
    metrics,
    schedule,
  });
  const skipped = async (m: string, mode: Mode): Promise<number> =>
    (await metrics.ticksSkipped.get()).values.find((v) => v.labels.mirror === m && v.labels.mode === mode)
      ?.value ?? 0;
  const started = () => calls.map((c) => `${c.mirror}:${c.mode}`);
  return { scheduler, calls, scheduled, skipped, started };
}

/** Lets every promise chain the scheduler has pending run to completion. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function at(iso: string): TaskContext {
  const date = new Date(iso);
  return { date, dateLocalIso: iso, triggeredAt: date };
}

describe("createScheduler", () => {
  it("skips and counts a tick while the mirror's pass is running", async () => {
    const { scheduler, calls, skipped, started } = harness();
    expect(await scheduler.tick("a", "incremental")).toBe("started");
    expect(await scheduler.tick("a", "incremental")).toBe("skipped");
    expect(started()).toEqual(["a:incremental"]);
    expect(await skipped("a", "incremental")).toBe(1);

    calls[0]?.finish();
    await settle();
    expect(await scheduler.tick("a", "incremental")).toBe("started");
    expect(started()).toEqual(["a:incremental", "a:incremental"]);
  });

  it("skips and counts a tick while the database records a trigger in flight, but resume runs it", async () => {
    const inFlight = new Set(["a"]);
    const { scheduler, skipped, started } = harness({ isInFlight: (m) => inFlight.has(m) });
    expect(await scheduler.tick("a", "full")).toBe("skipped");
    expect(await skipped("a", "full")).toBe(1);
    expect(started()).toEqual([]);

    expect(await scheduler.resume("a", "incremental")).toBe("started");
    expect(started()).toEqual(["a:incremental"]);
  });

  it("runs a full that arrives during an incremental right after it, once", async () => {
    const { scheduler, calls, skipped, started } = harness();
    await scheduler.tick("a", "incremental");
    expect(await scheduler.tick("a", "full")).toBe("queued");
    expect(await scheduler.tick("a", "full")).toBe("skipped");
    expect(await skipped("a", "full")).toBe(1);
    expect(started()).toEqual(["a:incremental"]);

    calls[0]?.finish();
    await settle();
    expect(started()).toEqual(["a:incremental", "a:full"]);
    calls[1]?.finish();
    await settle();
    expect(started()).toEqual(["a:incremental", "a:full"]);
  });

  it("raises a waiting incremental to full when the full tick arrives", async () => {
    const { scheduler, calls, started } = harness({ max: 1 });
    await scheduler.tick("a", "incremental");
    expect(await scheduler.tick("b", "incremental")).toBe("queued");
    expect(await scheduler.tick("b", "full")).toBe("queued");
    expect(await scheduler.tick("b", "incremental")).toBe("queued");

    calls[0]?.finish();
    await settle();
    expect(started()).toEqual(["a:incremental", "b:full"]);
    calls[1]?.finish();
    await settle();
    expect(started()).toEqual(["a:incremental", "b:full"]);
  });

  it("runs at most maxConcurrentMirrors mirrors at once, the others in FIFO order", async () => {
    const { scheduler, calls, started } = harness({ max: 2 });
    expect(await scheduler.tick("a", "incremental")).toBe("started");
    expect(await scheduler.tick("b", "incremental")).toBe("started");
    expect(await scheduler.tick("c", "incremental")).toBe("queued");
    expect(await scheduler.tick("d", "full")).toBe("queued");
    expect(await scheduler.tick("c", "incremental")).toBe("queued");
    expect(started()).toEqual(["a:incremental", "b:incremental"]);

    calls[1]?.finish();
    await settle();
    expect(started()).toEqual(["a:incremental", "b:incremental", "c:incremental"]);

    calls[0]?.fail(new Error("upstream exploded"));
    await settle();
    expect(started()).toEqual(["a:incremental", "b:incremental", "c:incremental", "d:full"]);
  });

  it("stop aborts the passes' signal, drops waiting work and resolves once passes end", async () => {
    const { scheduler, calls, skipped, started } = harness({ max: 1 });
    await scheduler.tick("a", "incremental");
    await scheduler.tick("a", "full");
    await scheduler.tick("b", "incremental");

    let stopped = false;
    const stopping = scheduler.stop().then(() => {
      stopped = true;
    });
    expect(scheduler.stop()).toBe(scheduler.stop());
    expect(calls[0]?.signal.aborted).toBe(true);
    expect(calls[0]?.signal.reason).toBeInstanceOf(AbortedError);
    await settle();
    expect(stopped).toBe(false);

    calls[0]?.finish();
    await stopping;
    expect(started()).toEqual(["a:incremental"]);
    expect(await scheduler.tick("c", "incremental")).toBe("skipped");
    expect(await skipped("c", "incremental")).toBe(0);
    expect(started()).toEqual(["a:incremental"]);
  });

  it("start schedules an incremental and a full task per mirror in its time zone, once; stop removes them", async () => {
    const mirrors = [mirror("a"), mirror("b", { incrementalCron: "*/5 * * * *", timezone: "Europe/Berlin" })];
    const { scheduler, scheduled } = harness({ mirrors });
    scheduler.start();
    scheduler.start();
    expect(
      scheduled.map((s) => [s.options.name, s.expression, s.options.timezone, s.options.noOverlap]),
    ).toEqual([
      ["a:full", "0 3 * * *", "UTC", true],
      ["a:incremental", "*/15 * * * *", "UTC", true],
      ["b:full", "0 3 * * *", "Europe/Berlin", true],
      ["b:incremental", "*/5 * * * *", "Europe/Berlin", true],
    ]);
    for (const s of scheduled) expect(getTasks().has(s.task.id)).toBe(true);

    await scheduler.stop();
    for (const s of scheduled) expect(getTasks().has(s.task.id)).toBe(false);
    scheduler.start();
    expect(scheduled).toHaveLength(4);
  });

  it("a cron tick lasts as long as its pass, and drops the incremental when the full falls due in the same second", async () => {
    // 03:00 in Berlin is 02:00 UTC in winter: the full's time matching honours the time zone.
    const { scheduler, scheduled, calls, started } = harness({
      mirrors: [mirror("a", { timezone: "Europe/Berlin" })],
    });
    scheduler.start();
    const incremental = scheduled.find((s) => s.options.name === "a:incremental");
    const full = scheduled.find((s) => s.options.name === "a:full");

    let tickDone = false;
    const tick = Promise.resolve(incremental?.fn(at("2026-01-05T01:45:00.000Z"))).then(() => {
      tickDone = true;
    });
    await settle();
    expect(started()).toEqual(["a:incremental"]);
    expect(tickDone).toBe(false);
    calls[0]?.finish();
    await tick;

    const dropped = incremental?.fn(at("2026-01-05T02:00:00.000Z"));
    await settle();
    expect(started()).toEqual(["a:incremental"]);
    await dropped;
    const fullTick = full?.fn(at("2026-01-05T02:00:00.000Z"));
    await settle();
    expect(started()).toEqual(["a:incremental", "a:full"]);
    calls[1]?.finish();
    await fullTick;
    await scheduler.stop();
  });
});
