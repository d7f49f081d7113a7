/**
 * The schedule of `syncmirror run` (docs/scaling-out.md#scheduling), the same on both stores. Due passes live in
 * the database, not in a process: each look records the scheduled times that fell
 * (`tick-recorder.ts`), then, while this process has a free slot (`max_concurrent_mirrors`), takes
 * what is owed: first the triggers left in flight with no live holder (a dead replica's, or a
 * previous process's), then the due passes, oldest first (ties: the mirror whose last pass ended
 * longest ago). Taking one means taking the mirror's lease (`runPass`), where the pass checks that
 * it is still owed; it starts at once. Nothing is queued in memory: a pass nobody could start
 * stays due for whichever process frees a slot first.
 *
 * A trigger left in flight was already running in the fleet, in a slot that died with its
 * process: one such trigger at a time may be resumed beyond the slots (and only resumed: what is
 * due after it waits for a slot), so a replica whose slots are all busy still takes a dead
 * replica's pass over within a lease, not once its own passes end.
 *
 * A process looks at start-up, at each scheduled time (a timer), whenever one of its passes ends,
 * when asked (`wake`: a control, the daemon's watcher every poll interval), and so within one poll
 * interval of another replica leaving something owed.
 */
import type { MirrorConfig } from "./config.js";
import { AbortedError, LeaseLostError } from "./errors.js";
import { isDeadHereAndNow } from "./lease-holder.js";
import type { Logger } from "./log.js";
import type { Metrics } from "./metrics.js";
import { startableDue } from "./store/schedule-rules.js";
import { isDatabaseError, type Store } from "./store/store.js";
import { createTickRecorder } from "./tick-recorder.js";

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** A timer never waits longer than this (Node's limit is 24.8 days; the watcher looks anyway). */
const MAX_TIMER_MS = 3_600_000;

export interface SchedulerDeps {
  mirrors: readonly MirrorConfig[];
  maxConcurrentMirrors: number;
  store: Store;
  /** This process's instance id: a lease of its own that no pass here runs under is stale, not busy. */
  holderId: string;
  /**
   * Runs what the mirror is owed under its lease (with `resumeOnly`, only its trigger left in
   * flight). Calls `started(true)` as soon as it holds the lease and there is work,
   * `started(false)` when another process holds it or nothing is owed. Handles and logs its own
   * outcome; the scheduler only catches.
   */
  runPass: (
    mirror: MirrorConfig,
    signal: AbortSignal,
    started: (running: boolean) => void,
    options: { resumeOnly: boolean },
  ) => Promise<void>;
  log: Logger;
  metrics: Metrics;
  now?: () => Date;
}

export interface Scheduler {
  /** The first look: catch-up, triggers left in flight, due passes. Idempotent. */
  start(): Promise<void>;
  /** Looks again soon (after the look under way, if any). */
  wake(): void;
  /** Passes running here now. */
  running(): number;
  /** Stops looking, aborts running passes, resolves once they end. Idempotent. */
  stop(): Promise<void>;
}

export function createScheduler(deps: SchedulerDeps): Scheduler {
  const { store, log, metrics } = deps;
  const now = deps.now ?? (() => new Date());
  const byName = new Map(deps.mirrors.map((m) => [m.name, m]));
  const recorder = createTickRecorder(deps);
  const controller = new AbortController();
  const active = new Map<string, Promise<void>>();
  const backoff = createFailureBackoff(now, wake);
  let timer: NodeJS.Timeout | undefined;
  let looking: Promise<void> | undefined;
  let again = false;
  let started = false;
  let stopped = false;
  let stopping: Promise<void> | undefined;

  function wake(): void {
    if (stopped) return;
    if (looking) {
      again = true;
      return;
    }
    looking = (async () => {
      do {
        again = false;
        await look();
      } while (again && !stopped);
    })().finally(() => {
      looking = undefined;
    });
  }

  async function look(): Promise<void> {
    await recorder
      .record(now())
      .catch((error: unknown) => log.error({ err: error }, "recording scheduled times failed"));
    try {
      await takeWork();
    } catch (error) {
      // The watcher reports an unreachable database; the next look tries again.
      if (isDatabaseError(error))
        log.debug({ err: (error as Error).message }, "could not look for due passes");
      else log.error({ err: error }, "looking for due passes failed");
    }
    arm();
  }

  function arm(): void {
    clearTimeout(timer);
    const next = recorder.nextAt();
    if (stopped || next === null) return;
    timer = setTimeout(wake, Math.min(MAX_TIMER_MS, Math.max(0, next.getTime() - now().getTime())));
    timer.unref();
  }

  const hasSlot = () => !stopped && active.size < deps.maxConcurrentMirrors;
  // One pass beyond the slots, for a trigger left in flight (see the top of this file).
  const hasOrphanRoom = () => !stopped && active.size <= deps.maxConcurrentMirrors;

  async function takeWork(): Promise<void> {
    if (!hasOrphanRoom()) return;
    const { orphans, due } = await owed();
    for (const name of orphans) {
      if (!hasOrphanRoom()) return;
      if (!active.has(name)) await launch(byName.get(name) as MirrorConfig, !hasSlot());
    }
    for (const name of due) {
      if (!hasSlot()) return;
      if (!active.has(name)) await launch(byName.get(name) as MirrorConfig, false);
    }
  }

  /**
   * Mirrors owed a pass that no live process holds: triggers left in flight (`orphans`), and due
   * passes by age. A holder gone from this host (`isDeadHereAndNow`) is no live process.
   */
  async function owed(): Promise<{ orphans: string[]; due: string[] }> {
    const [schedules, holders] = await Promise.all([store.schedules.list(), store.leases.holders()]);
    for (const s of schedules)
      if (byName.has(s.mirror)) metrics.mirrorPaused.set({ mirror: s.mirror }, s.paused ? 1 : 0);
    // A lease of this process's own with no pass running here was left by a pass that failed to release it.
    const busy = (name: string) => {
      const lease = holders.get(name);
      return (
        active.has(name) ||
        backoff.holds(name) ||
        (lease !== undefined && lease.holder !== deps.holderId && !isDeadHereAndNow(lease))
      );
    };
    const free = deps.mirrors.filter((m) => !busy(m.name)).map((m) => m.name);
    const orphans: string[] = [];
    for (const name of free) if (await store.triggers.findInFlight(name)) orphans.push(name);
    const due = await Promise.all(
      schedules.flatMap((s) => {
        const d = startableDue(s);
        return d && free.includes(s.mirror) && !orphans.includes(s.mirror)
          ? [
              store.mirrors
                .get(s.mirror)
                .then((m) => ({ name: s.mirror, since: d.since, ran: m?.lastOutcomeAt ?? "" })),
            ]
          : [];
      }),
    );
    // Every mirror on one cron falls due at the same time: among those, the one whose last pass
    // ended longest ago goes first, so short slots take turns instead of favouring the config's order.
    due.sort((a, b) => compare(a.since, b.since) || compare(a.ran, b.ran));
    return { orphans, due: due.map((d) => d.name) };
  }

  /** Starts the mirror's pass in a slot; resolves once it runs, or once it turned out not to. */
  async function launch(mirror: MirrorConfig, resumeOnly: boolean): Promise<void> {
    let report!: (running: boolean) => void;
    const runs = new Promise<boolean>((resolve) => {
      report = resolve;
    });
    const pass = runPass(mirror, report, resumeOnly).finally(() => report(false));
    active.set(mirror.name, pass);
    const running = await runs;
    const done = pass.finally(() => {
      if (active.get(mirror.name) === pass) active.delete(mirror.name);
      // A slot is free again, and the mirror may have fallen due while it ran.
      if (running) wake();
    });
    if (!running) await done;
  }

  async function runPass(
    mirror: MirrorConfig,
    started: (running: boolean) => void,
    resumeOnly: boolean,
  ): Promise<void> {
    let ran = false;
    const report = (running: boolean) => {
      ran = running;
      started(running);
    };
    try {
      await deps.runPass(mirror, controller.signal, report, { resumeOnly });
      // A pass the upstream failed (a rejected token, a service down) ends with its trigger kept in
      // flight: it is owed again at once, and would be taken again at once, over and over.
      if (ran && !controller.signal.aborted && (await store.triggers.findInFlight(mirror.name))) {
        const retryInSeconds = backoff.failed(mirror.name) / 1000;
        log.warn(
          { mirror: mirror.name, retry_in_seconds: retryInSeconds },
          `the pass ended with its trigger still in flight; this process resumes it in ${retryInSeconds} s`,
        );
        return;
      }
      backoff.clear(mirror.name);
    } catch (err) {
      // Shutdown is not a failure: the trigger stays in flight and the next start resumes it.
      if (err instanceof AbortedError && controller.signal.aborted && !(err instanceof LeaseLostError)) {
        log.info({ mirror: mirror.name }, "pass stopped by shutdown; the next start resumes it");
        return;
      }
      // Logged where it was found; the replica now holding the lease carries the pass on.
      if (err instanceof LeaseLostError) return;
      const retryInSeconds = backoff.failed(mirror.name) / 1000;
      log.error(
        { err, mirror: mirror.name, retry_in_seconds: retryInSeconds },
        `sync pass failed; this process tries the mirror again in ${retryInSeconds} s`,
      );
    }
  }

  return {
    async start() {
      if (started || stopped) return;
      started = true;
      wake();
      await looking;
    },
    wake,
    running: () => active.size,
    stop() {
      if (!stopping) {
        stopped = true;
        clearTimeout(timer);
        backoff.stop();
        controller.abort(new AbortedError("syncmirror is shutting down"));
        stopping = (async () => {
          await looking;
          await Promise.all([...active.values()]);
        })();
      }
      return stopping;
    },
  };
}

const FIRST_RETRY_MS = 5_000;
const LAST_RETRY_MS = 60_000;

/**
 * A pass that failed (a database error ends a pass with its trigger kept in flight, as does an
 * upstream failure such as a rejected token) leaves the mirror owed: without a pause this process
 * would take it again at once, and again, each time reading the runs upstream. So it waits 5 s,
 * doubling up to a minute while the passes keep failing, before taking the mirror again; another
 * replica may take it meanwhile.
 */
function createFailureBackoff(now: () => Date, wake: () => void) {
  const waits = new Map<string, { until: number; ms: number }>();
  const timers = new Set<NodeJS.Timeout>();
  return {
    holds: (mirror: string) => (waits.get(mirror)?.until ?? 0) > now().getTime(),
    failed(mirror: string): number {
      const ms = Math.min(LAST_RETRY_MS, (waits.get(mirror)?.ms ?? FIRST_RETRY_MS / 2) * 2);
      waits.set(mirror, { until: now().getTime() + ms, ms });
      const timer = setTimeout(() => {
        timers.delete(timer);
        wake();
      }, ms);
      timer.unref();
      timers.add(timer);
      return ms;
    },
    clear: (mirror: string) => waits.delete(mirror),
    stop() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}
