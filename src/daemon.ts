/**
 * The composition root of `syncmirror run`: HTTP first (so probes answer while the database is
 * opened), then the database, metrics restored from it, the resumption of triggers a previous
 * process left in flight, and the schedules. `stop()` releases everything last-opened-first.
 */
import { setTimeout as sleepTimer } from "node:timers/promises";
import { Registry } from "prom-client";
import type { CommandIo } from "./commands/command.js";
import { type Config, readLogLevel } from "./config.js";
import { DatabaseLockedError } from "./errors.js";
import { createHttpServer } from "./http-server.js";
import { createLogger, type Logger } from "./log.js";
import { createMetrics, type Metrics } from "./metrics.js";
import { createRuntime, type Runtime } from "./runtime.js";
import { createScheduler, type Scheduler } from "./scheduler.js";
import { buildStatus } from "./sync/status-report.js";
import { recordSkippedGauge, syncMirror } from "./sync/sync-mirror.js";

const LOCK_RETRY_MS = 2000;
const OUTCOMES = ["succeeded", "partial", "failed", "refused"] as const;
const MODES = ["incremental", "full"] as const;

export interface Daemon {
  /** Resolves once the schedules run; rejects on a config, database or listen error. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function createDaemon(config: Config, io: CommandIo, options: { log?: Logger } = {}): Daemon {
  const log = options.log ?? createLogger({ level: readLogLevel(io.env), name: "syncmirror" });
  const metrics = createMetrics(new Registry());
  let runtime: Runtime | undefined;
  let scheduler: Scheduler | undefined;
  const http = createHttpServer({
    registry: metrics.registry,
    isReady: () => runtime !== undefined,
    getStatus: () => (runtime ? buildStatus(runtime.store, config.mirrors) : { mirrors: [], ready: false }),
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
      const { port } = await http.listen(config.http.host, config.http.port);
      log.info({ host: config.http.host, port }, "http listening: /metrics /healthz /readyz /status");
      runtime = await openWhenFree(config, io, log, metrics);
      if (runtime === undefined) return;
      restoreMetrics(runtime, metrics);
      const rt = runtime;
      scheduler = createScheduler({
        mirrors: config.mirrors,
        maxConcurrentMirrors: config.maxConcurrentMirrors,
        runPass: async (mirror, mode, signal) => {
          await syncMirror(mirror, rt.syncContext(signal), {
            full: mode === "full",
            allowMassDelete: false,
            dryRun: false,
          });
        },
        log,
        metrics,
      });
      for (const mirror of config.mirrors) {
        const inFlight = rt.store.state.findInFlight(mirror.name);
        if (inFlight) void scheduler.resume(mirror.name, inFlight.mode);
      }
      scheduler.start();
      log.info({ mirrors: config.mirrors.map((m) => m.name) }, "daemon started");
    },

    async stop() {
      await scheduler?.stop();
      await http.close();
      await runtime?.close();
      log.info("daemon stopped");
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
  for (;;) {
    try {
      return createRuntime(config, io, { lock: true, log, metrics });
    } catch (error) {
      if (!(error instanceof DatabaseLockedError)) throw error;
      log.warn({ err: error.message }, "database locked by another process; waiting (not ready)");
      try {
        await sleepTimer(LOCK_RETRY_MS, undefined, { signal: io.signal });
      } catch {
        return undefined;
      }
    }
  }
}

/** Gauges come from the database, so they are right from the first scrape after a restart. */
function restoreMetrics(runtime: Runtime, metrics: Metrics): void {
  for (const mirror of runtime.config.mirrors) {
    const labels = { mirror: mirror.name };
    runtime.store.state.ensureMirror(mirror.name, mirror.syncConfigId);
    const state = runtime.store.state.getMirror(mirror.name);
    metrics.resources.set(labels, runtime.store.access.countLive(mirror.name));
    metrics.pairsAwaitingBaseline.set(labels, runtime.store.pairs.countAwaitingBaseline(mirror.name));
    metrics.heldRevocations.set(labels, state?.heldRevocations ?? 0);
    // The gauge describes the latest trigger: the one in flight once its POST was answered.
    const inFlight = runtime.store.state.findInFlight(mirror.name);
    const latest = inFlight?.state === "active" ? inFlight : runtime.store.state.lastFinished(mirror.name);
    recordSkippedGauge(metrics, mirror.name, latest);
    for (const mode of MODES) {
      for (const outcome of OUTCOMES) metrics.triggers.inc({ ...labels, mode, outcome }, 0);
      const last = mode === "full" ? state?.lastFullSuccessAt : state?.lastIncrementalSuccessAt;
      if (last) metrics.lastSuccess.set({ ...labels, mode }, Date.parse(last) / 1000);
    }
  }
}
