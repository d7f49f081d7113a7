/**
 * Cron per mirror for `syncmirror run` (SPEC "One trigger per mirror at a time"). Each mirror has
 * an incremental and a full cron task in its time zone. The rules, in the order a tick meets them:
 *
 * - A tick for a mirror with a pass running here is skipped and counted (`ticksSkipped`), except
 *   a full arriving during an incremental: that full runs as soon as the incremental ends
 *   (the incremental finishes first, then the full triggers), keeping the mirror's slot.
 * - A tick for a mirror already waiting for a slot joins that wait; a full raises a waiting
 *   incremental to full (a full snapshot covers everything an incremental would bring).
 * - A tick for a mirror whose trigger the database records in flight (`isInFlight`: left by
 *   another process) is skipped and counted.
 * - When the incremental and the full cron fall due in the same second, the incremental is
 *   dropped and the full runs.
 * - At most `maxConcurrentMirrors` mirrors run passes at once; the others wait in FIFO order.
 *
 * node-cron's `noOverlap` adds a second guard: a cron task's callback lasts as long as the pass
 * it asked for, so the same task cannot fire again meanwhile (that is counted as a skip too).
 */
import { schedule as cronSchedule, type ScheduledTask, type TaskContext, type TaskOptions } from "node-cron";
import type { Logger } from "pino";
import type { MirrorConfig } from "./config.js";
import { AbortedError } from "./errors.js";
import type { Metrics } from "./metrics.js";
import type { SkipReason } from "./skip-reasons.js";
import type { Mode } from "./store/types.js";
import { cronLogger, tickIdentity } from "./tick.js";

/** How late a tick may still run; cron expressions here have minute granularity. */
const MISSED_TICK_TOLERANCE_MS = 60_000;
export type TickOutcome = "started" | "skipped" | "queued";

/** node-cron's `schedule`, narrowed to how the scheduler calls it (a seam for tests). */
export type ScheduleFn = (
  expression: string,
  fn: (context: TaskContext) => unknown,
  options: TaskOptions,
) => ScheduledTask;

export interface SchedulerDeps {
  mirrors: readonly MirrorConfig[];
  maxConcurrentMirrors: number;
  /** One pass of one mirror. Handles and logs its own outcome; the scheduler only catches. */
  runPass: (mirror: MirrorConfig, mode: Mode, signal: AbortSignal) => Promise<void>;
  /** Whether the database records a trigger of this mirror in flight. */
  isInFlight?: (mirror: string) => boolean;
  /**
   * Takes the cron tick (mirror, mode, scheduled minute) for this replica; false when another
   * replica already took it (SPEC "Scale-out": each tick runs on exactly one replica).
   */
  claimTick?: (mirror: string, mode: Mode, tickAt: string) => Promise<boolean>;
  log: Logger;
  metrics: Metrics;
  schedule?: ScheduleFn;
}

export interface Scheduler {
  /** Registers the cron tasks. Idempotent; a stopped scheduler stays stopped. */
  start(): void;
  /** Stops the cron tasks, aborts running passes, drops waiting work, resolves once passes end. Idempotent. */
  stop(): Promise<void>;
  /** What a cron tick does (also a test seam). Resolves at once with what became of the tick. */
  tick(mirror: string, mode: Mode): Promise<TickOutcome>;
  /**
   * Runs a pass for a trigger a previous process left in flight (the pass resumes it): a tick
   * that the database's in-flight record, being that very trigger, does not skip.
   */
  resume(mirror: string, mode: Mode): Promise<TickOutcome>;
  /** Whether a pass of the mirror runs here or waits for a slot. */
  isBusy(mirror: string): boolean;
}

/** Work asked for one mirror; `done` resolves when its pass ends or it is dropped. */
interface Work {
  mode: Mode;
  readonly done: Promise<void>;
  readonly finish: () => void;
}

interface MirrorState {
  readonly config: MirrorConfig;
  /** The pass running now. */
  running: Work | undefined;
  /** Waiting in the queue for a slot. */
  waiting: Work | undefined;
  /** A full to run as soon as the running incremental ends. */
  fullAfter: Work | undefined;
}

interface Submitted {
  outcome: TickOutcome;
  work?: Work;
}

export function createScheduler(deps: SchedulerDeps): Scheduler {
  const schedule = deps.schedule ?? cronSchedule;
  const states = new Map(
    deps.mirrors.map((config): [string, MirrorState] => [
      config.name,
      { config, running: undefined, waiting: undefined, fullAfter: undefined },
    ]),
  );
  const queue: MirrorState[] = [];
  const passes = new Set<Promise<void>>();
  const controller = new AbortController();
  const tasks: ScheduledTask[] = [];
  let started = false;
  let stopped = false;
  let stopping: Promise<void> | undefined;

  function submit(name: string, mode: Mode, honourInFlight: boolean): Submitted {
    const state = states.get(name);
    if (!state) throw new Error(`scheduler: unknown mirror "${name}"`);
    if (stopped) return { outcome: "skipped" };
    if (state.running) {
      if (mode === "full" && state.running.mode === "incremental" && !state.fullAfter) {
        state.fullAfter = createWork("full");
        deps.log.info({ mirror: name, mode }, "full tick will run once the running incremental ends");
        return { outcome: "queued", work: state.fullAfter };
      }
      return skip(name, mode, "running", "a pass of this mirror is still running");
    }
    if (state.waiting) {
      if (mode === "full") state.waiting.mode = "full";
      return { outcome: "queued", work: state.waiting };
    }
    if (honourInFlight && deps.isInFlight?.(name)) {
      return skip(name, mode, "in_flight", "the database records a trigger of this mirror in flight");
    }
    const work = createWork(mode);
    if (passes.size < deps.maxConcurrentMirrors) {
      run(state, work);
      return { outcome: "started", work };
    }
    state.waiting = work;
    queue.push(state);
    return { outcome: "queued", work };
  }

  function skip(mirror: string, mode: Mode, reason: SkipReason, why: string): Submitted {
    deps.metrics.ticksSkipped.inc({ mirror, mode, reason });
    deps.log.info({ mirror, mode, reason }, `tick skipped: ${why}`);
    return { outcome: "skipped" };
  }

  /** Runs the work, then a full that arrived meanwhile, then hands the slot on. */
  function run(state: MirrorState, first: Work): void {
    const pass = (async () => {
      let work: Work | undefined = first;
      while (work) {
        state.running = work;
        await runPass(state.config, work.mode);
        work.finish();
        work = state.fullAfter;
        state.fullAfter = undefined;
      }
      state.running = undefined;
    })();
    passes.add(pass);
    void pass.finally(() => {
      passes.delete(pass);
      drain();
    });
  }

  async function runPass(config: MirrorConfig, mode: Mode): Promise<void> {
    try {
      await deps.runPass(config, mode, controller.signal);
    } catch (err) {
      // Shutdown is not a failure: the trigger stays in flight and the next start resumes it.
      if (err instanceof AbortedError && controller.signal.aborted) {
        deps.log.info({ mirror: config.name, mode }, "pass stopped by shutdown; the next start resumes it");
        return;
      }
      deps.log.error({ err, mirror: config.name, mode }, "sync pass failed");
    }
  }

  function drain(): void {
    while (!stopped && passes.size < deps.maxConcurrentMirrors) {
      const state = queue.shift();
      if (!state) return;
      const work = state.waiting;
      state.waiting = undefined;
      if (work) run(state, work);
    }
  }

  function scheduleTask(config: MirrorConfig, mode: Mode, supersededAt?: (date: Date) => boolean) {
    const log = deps.log.child({ mirror: config.name, mode });
    const task = schedule(
      mode === "full" ? config.fullCron : config.incrementalCron,
      async (context) => {
        if (supersededAt?.(context.date)) {
          log.debug("incremental tick dropped: the full falls due at the same time");
          return;
        }
        const tickAt = tickIdentity(mode === "full" ? config.fullCron : config.incrementalCron, context.date);
        if (deps.claimTick && !(await deps.claimTick(config.name, mode, tickAt).catch(() => false))) {
          skip(config.name, mode, "taken", "another replica took this tick (or the database is unreachable)");
          return;
        }
        await submit(config.name, mode, true).work?.done;
      },
      {
        timezone: config.timezone,
        noOverlap: true,
        name: `${config.name}:${mode}`,
        logger: cronLogger(log),
        // A large page commits in one synchronous transaction and may hold the event loop past
        // node-cron's default 1 s tolerance; a late tick must still run (a missed full costs a day).
        missedExecutionTolerance: MISSED_TICK_TOLERANCE_MS,
      },
    );
    // node-cron's noOverlap blocked the tick (and logged it): count it like any other skip.
    task.on("execution:overlap", () =>
      deps.metrics.ticksSkipped.inc({ mirror: config.name, mode, reason: "overlap" }),
    );
    tasks.push(task);
    return task;
  }

  /** Everything up to the final await happens at once, so no tick or queued work slips in. */
  async function shutdown(): Promise<void> {
    const tasksStopped = tasks.splice(0).map(async (task) => {
      await task.stop();
      await task.destroy(); // also removes it from node-cron's process-wide registry
    });
    controller.abort(new AbortedError("syncmirror is shutting down"));
    for (const state of states.values()) {
      state.waiting?.finish();
      state.fullAfter?.finish();
      state.waiting = undefined;
      state.fullAfter = undefined;
    }
    queue.length = 0;
    await Promise.all([...tasksStopped, ...passes]);
  }

  return {
    start() {
      if (started || stopped) return;
      started = true;
      for (const config of deps.mirrors) {
        const full = scheduleTask(config, "full");
        scheduleTask(config, "incremental", (date) => full.match(date));
      }
    },
    stop() {
      if (!stopping) {
        stopped = true;
        stopping = shutdown();
      }
      return stopping;
    },
    async tick(mirror, mode) {
      return submit(mirror, mode, true).outcome;
    },
    async resume(mirror, mode) {
      return submit(mirror, mode, false).outcome;
    },
    isBusy(mirror) {
      const state = states.get(mirror);
      return state !== undefined && (state.running !== undefined || state.waiting !== undefined);
    },
  };
}

function createWork(mode: Mode): Work {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  return { mode, done, finish };
}
