/**
 * The composition root of `syncmirror run`: the environment the config needs checked first (a
 * config error starts nothing), then HTTP (so probes answer while the database is opened), then the database, metrics restored from it, the resumption of triggers a previous
 * process (or a replica that died) left in flight, and the schedules. `stop()` releases
 * everything last-opened-first.
 *
 * Replicas sharing a PostgreSQL store (docs/scaling-out.md#scheduling) coordinate through it: due
 * passes are recorded there, a pass runs under the mirror's lease, and every poll interval the
 * watcher checks the connection, renews this daemon's heartbeat and wakes the scheduler, which
 * resumes, within a lease plus one poll interval, the trigger of a mirror whose holder stopped
 * renewing (even with every slot busy: that pass was already running), and starts what is due
 * while slots are free.
 */
import { setTimeout as sleepTimer } from "node:timers/promises";
import { Registry } from "prom-client";
import type { CommandIo } from "./commands/command.js";
import { type Config, requireEnvironment } from "./config.js";
import { startHistoryPruning } from "./console/prune-history.js";
import { createConsumerRoutes } from "./consumers/http-routes.js";
import { AbortedError, DatabaseLockedError, DatabaseUnavailableError, LeaseLostError } from "./errors.js";
import { createConsolePage } from "./http/console-page.js";
import { createControlRoutes } from "./http/control-routes.js";
import { createHistoryRoutes } from "./http/history-routes.js";
import { createHttpServer } from "./http-server.js";
import { createLeaseHolder } from "./lease-holder.js";
import type { Logger } from "./log.js";
import { createMetrics, initMirrorSeries, type Metrics } from "./metrics.js";
import { withMirrorLease } from "./mirror-lease.js";
import { reconcileDeps, runOwedPass } from "./mirror-pass.js";
import { createIoLogger, createRuntime, type Runtime } from "./runtime.js";
import { createScheduler, type Scheduler } from "./scheduler.js";
import { isDatabaseError } from "./store/store.js";
import type { LeaseHolder } from "./store/types.js";
import {
  followPasses,
  refreshDriftGauges,
  refreshMirrorGauges,
  refreshProblemGauges,
} from "./sync/gauges.js";
import { buildStatus, retiredGrants } from "./sync/status-report.js";
import { checkBindings } from "./sync-configs/bind.js";
import { reconcileMirror } from "./sync-configs/reconcile.js";
import { isDeclared } from "./sync-configs/resolve.js";

const LOCK_RETRY_MS = 2000;
const UNAVAILABLE_RETRY_MAX_MS = 30_000;

export interface Daemon {
  /** Resolves once the schedules run; rejects on a config, database or listen error. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function createDaemon(config: Config, io: CommandIo, options: { log?: Logger } = {}): Daemon {
  const log = options.log ?? createIoLogger(io);
  const metrics = createMetrics(new Registry());
  for (const mirror of config.mirrors) initMirrorSeries(metrics, mirror.name, mirror.declared !== null);
  const holder = createLeaseHolder();
  const startedAt = new Date().toISOString();
  let runtime: Runtime | undefined;
  let scheduler: Scheduler | undefined;
  let watcher: NodeJS.Timeout | undefined;
  let pruning: { stop(): void } | undefined;
  // Readiness needs a working connection: the watcher pings the store each round.
  let connected = false;
  /**
   * Whether start() got as far as listening: a start refused before (a token variable unset, the
   * port taken) is reported by its one error line, with no log line saying a daemon stopped.
   */
  let listening = false;
  const mirrors = config.mirrors.map((m) => m.name);
  /** The mirrors whose drift the daemon serves: those it applies. */
  const managed = config.manageSyncConfigs ? config.mirrors.filter(isDeclared).map((m) => m.name) : [];
  const http = createHttpServer({
    registry: metrics.registry,
    isReady: () => runtime !== undefined && connected,
    getStatus: async () => (runtime ? await buildStatus(runtime.store, config.mirrors) : undefined),
    token: config.http.token,
    // The console's routes first: the consumer routes answer every other `/v1/` path.
    routes: [
      createHistoryRoutes({
        store: () => runtime?.store,
        token: config.http.token,
        mirrors,
      }),
      createControlRoutes({
        source: () => runtime?.store,
        token: config.http.token,
        mirrors,
        // This replica looks at once; the others within one poll interval.
        onChange: () => scheduler?.wake(),
      }),
      createConsumerRoutes({
        source: () => runtime?.store,
        token: config.http.token,
        mirrors,
        searchEnabled: config.search.enabled,
        signal: io.signal,
      }),
    ],
    page: createConsolePage(),
    log,
  });

  io.signal.addEventListener(
    "abort",
    () =>
      log.info({ reason: reasonOf(io.signal) }, "stopping: the current page commits, then the daemon exits"),
    { once: true },
  );

  return {
    async start() {
      requireEnvironment(config);
      const { port, loopback } = await http.listen(
        config.http.host,
        config.http.port,
        config.http.listenFrom,
      );
      listening = true;
      log.info(
        { host: config.http.host, port },
        "http listening: / (console) /metrics /healthz /readyz /status /v1/changes /v1/search /v1/passes /v1/problems /v1/mirrors/{name}/(pause|resume|trigger|approve-sweep)",
      );
      if (config.http.token === undefined && !loopback) {
        log.warn(
          { token_env: config.http.tokenEnv },
          `/status answers 401 (it names users): set ${config.http.tokenEnv} to require a bearer token, or listen on a loopback address`,
        );
      }
      if (io.signal.aborted) return;
      runtime = await openWhenFree(config, io, log, metrics);
      if (runtime === undefined) return;
      const rt = runtime;
      const beat = () =>
        rt.store.replicas.beat(
          {
            instanceId: holder.id,
            name: holder.name,
            scope: holder.scope,
            startedAt,
            slots: config.maxConcurrentMirrors,
            running: scheduler?.running() ?? 0,
          },
          config.database.leaseSeconds,
        );
      /** A start-up step on the database; false when a stop came first. Ready again once one passes. */
      const onDatabase = async (step: () => Promise<void>): Promise<boolean> => {
        const passed = await retryWhileUnreachable(step, io.signal, log, () => {
          connected = false;
        });
        if (passed) connected = true;
        return passed && !io.signal.aborted;
      };
      // Ready only once the gauges are back: the first scrape after ready shows the stored state.
      // Alive on the database before ready: a `trigger` sent once /readyz answers leaves its pass
      // to this daemon (which takes it once its schedules start) instead of running it itself.
      if (
        !(await onDatabase(async () => {
          await restoreMetrics(rt, metrics, managed);
          await beat();
        }))
      )
        return;
      if (!(await onDatabase(() => warnRetired(rt)))) return;
      pruning = await startHistoryPruning({
        store: rt.store,
        keepDays: config.history.keepDays,
        log,
        signal: io.signal,
      });
      // A stop asked for while starting (the first prune can be long) starts no pass.
      if (io.signal.aborted) return;
      const startupApplyOwed = new Set<string>();
      const sched = createScheduler({
        mirrors: config.mirrors,
        maxConcurrentMirrors: config.maxConcurrentMirrors,
        store: rt.store,
        holderId: holder.id,
        runPass: async (mirror, signal, started, options) => {
          await runOwedPass({ runtime: rt, holder, startupApplyOwed }, mirror, signal, started, options);
        },
        log,
        metrics,
      });
      scheduler = sched;
      if (
        config.manageSyncConfigs &&
        !(await onDatabase(() => applyAtStart(rt, holder, startupApplyOwed, io.signal)))
      )
        return;
      if (!(await onDatabase(() => checkBindings(config, rt.store)))) return;
      await sched.start();
      const passes = followPasses(rt.store, rt.metrics, mirrors);
      watcher = setInterval(() => {
        rt.store.ping().then(
          async () => {
            connected = true;
            await refreshGauges(rt, { mirrors, managed }, passes, log);
            sched.wake();
            return beat().catch(() => {});
          },
          (error: unknown) => {
            if (connected) log.error({ err: (error as Error).message }, "database unreachable: not ready");
            connected = false;
            // Scheduled times falling now are counted as db_unreachable, then caught up.
            sched.wake();
          },
        );
      }, watchIntervalMs(config));
      watcher.unref();
      log.info(
        { mirrors: config.mirrors.map((m) => m.name), holder: holder.name, instance_id: holder.id },
        "daemon started",
      );
    },

    async stop() {
      clearInterval(watcher);
      pruning?.stop();
      await scheduler?.stop();
      // Gone at once for `trigger` and `status`, rather than when the heartbeat expires.
      await runtime?.store.replicas.leave(holder.id).catch(() => {});
      await http.close();
      await runtime?.close();
      if (listening) log.info("daemon stopped");
    },
  };
}

function reasonOf(signal: AbortSignal): string {
  return signal.reason instanceof Error ? signal.reason.message : "stop requested";
}

/**
 * Another process may still hold the database (an old container draining): wait for it, not
 * ready meanwhile, rather than exit and be restarted in a loop.
 */
async function openWhenFree(
  config: Config,
  io: CommandIo,
  log: Logger,
  metrics: Metrics,
): Promise<Runtime | undefined> {
  const unavailable = unavailableBackoff();
  for (;;) {
    let waitMs: number;
    try {
      return await createRuntime(config, io, { lock: true, retriedBy: "next pass", log, metrics });
    } catch (error) {
      if (error instanceof DatabaseLockedError) {
        waitMs = LOCK_RETRY_MS;
        log.warn({ err: error.message }, "database locked by another process; waiting (not ready)");
      } else if (error instanceof DatabaseUnavailableError) {
        waitMs = unavailable();
        log.warn({ err: error.message, retry_in_ms: waitMs }, "database unreachable; retrying (not ready)");
      } else {
        throw error;
      }
    }
    if (!(await pause(waitMs, io.signal))) return undefined;
  }
}

/**
 * Runs a start-up step, again while the database does not answer: it was opened, then lost (a
 * failover, the network) before the daemon finished starting. Not ready meanwhile, rather than exit
 * and leave the passes to a supervisor's restart loop. False when a stop came first.
 */
async function retryWhileUnreachable(
  step: () => Promise<void>,
  signal: AbortSignal,
  log: Logger,
  onUnreachable: () => void,
): Promise<boolean> {
  const unavailable = unavailableBackoff();
  for (;;) {
    try {
      await step();
      return true;
    } catch (error) {
      if (signal.aborted) return false;
      if (!isDatabaseError(error)) throw error;
      onUnreachable();
      const waitMs = unavailable();
      log.warn(
        { err: error.message, retry_in_ms: waitMs },
        "database unreachable while starting; retrying (not ready)",
      );
      if (!(await pause(waitMs, signal))) return false;
    }
  }
}

/** Each call the next wait while the database does not answer: 1 s, doubling up to 30 s. */
function unavailableBackoff(): () => number {
  let nextMs = 1000;
  return () => {
    const waitMs = nextMs;
    nextMs = Math.min(nextMs * 2, UNAVAILABLE_RETRY_MAX_MS);
    return waitMs;
  };
}

/** False when the stop came first. */
async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await sleepTimer(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}

/**
 * Each watch round: the open problems and the drift of the `managed` mirrors (another replica's
 * pass, or an apply, may have changed them), and the gauges of a mirror whose pass another process ran.
 */
async function refreshGauges(
  runtime: Runtime,
  { mirrors, managed }: { mirrors: readonly string[]; managed: readonly string[] },
  passes: ReturnType<typeof followPasses>,
  log: Logger,
): Promise<void> {
  try {
    await refreshProblemGauges(runtime.store, runtime.metrics, mirrors);
    await refreshDriftGauges(runtime.store, runtime.metrics, managed);
    await passes.follow();
  } catch (error) {
    log.warn({ err: (error as Error).message }, "could not read the gauges from the database; trying again");
  }
}

/**
 * One poll interval: how soon a trigger orphaned by a dead replica is resumed after its lease
 * expires, or a pass left due by another replica or by a control is started. It is also the
 * heartbeat, which lives one lease: at most a third of it, so a lease shorter than the poll
 * interval never lets a live replica look gone (to `status`, or to `trigger`, which would then run
 * the pass itself).
 */
function watchIntervalMs(config: Config): number {
  const seconds = Math.min(
    ...config.mirrors.map((m) => m.pollInitialSeconds),
    config.database.leaseSeconds / 3,
  );
  return Math.max(250, seconds * 1000);
}

/** Gauges come from the database, so they are right from the first scrape after a restart. */
async function restoreMetrics(runtime: Runtime, metrics: Metrics, managed: readonly string[]): Promise<void> {
  for (const mirror of runtime.config.mirrors) {
    if (mirror.syncConfigId !== null) await runtime.store.mirrors.ensure(mirror.name, mirror.syncConfigId);
    await refreshMirrorGauges(runtime.store, metrics, mirror.name);
  }
  // The start-up apply, after ready, sets it again; until then, what the last attempt recorded.
  await refreshDriftGauges(runtime.store, metrics, managed);
}

/** No pass runs for a mirror the config no longer names: said once at start, with what it still grants. */
async function warnRetired(runtime: Runtime): Promise<void> {
  for (const retired of await runtime.store.mirrors.retired(runtime.config.mirrors.map((m) => m.name)))
    runtime.log.warn(
      { mirror: retired.mirror, users: retired.users, keys: retired.keys },
      `retired mirror ${retired.mirror} (not in the config) ${retiredGrants(retired)}`,
    );
}

/**
 * `manage_sync_configs`: every declared config applied before the schedules start, each under its
 * mirror's lease; one that must wait (a pass in flight, another replica's lease) is left in `owed`,
 * applied before this daemon's next pass of it.
 */
async function applyAtStart(
  runtime: Runtime,
  holder: LeaseHolder,
  owed: Set<string>,
  signal: AbortSignal,
): Promise<void> {
  const { store, log, config, metrics } = runtime;
  for (const mirror of config.mirrors.filter(isDeclared)) {
    if (signal.aborted) return;
    try {
      const leased = await withMirrorLease(
        {
          store,
          mirror: mirror.name,
          holder,
          leaseSeconds: config.database.leaseSeconds,
          signal,
          log,
          metrics,
        },
        (leaseSignal) => reconcileMirror(mirror, reconcileDeps(runtime, leaseSignal, owed), { always: true }),
      );
      if (!leased.taken) owed.add(mirror.name);
    } catch (error) {
      // Stopped: the next start applies. A lease lost: this daemon applies before its next pass.
      if (error instanceof LeaseLostError) owed.add(mirror.name);
      else if (!(error instanceof AbortedError && signal.aborted)) throw error;
    }
  }
}
