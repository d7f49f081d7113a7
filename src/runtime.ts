/**
 * What every command that touches the mirror shares: logger, metrics, database, API client and
 * the sync context, built from a loaded config, and released last-opened-first.
 */
import { setTimeout as sleepTimer } from "node:timers/promises";
import { Registry } from "prom-client";
import { type ApiClient, createApiClient } from "./api/client.js";
import type { RetriedBy } from "./api/transport.js";
import type { CommandIo } from "./commands/command.js";
import {
  type Config,
  loadConfig,
  readCrashAt,
  readLogLevel,
  readRetryEachTransaction,
  requireEnvironment,
  requireToken,
} from "./config.js";
import { AbortedError } from "./errors.js";
import { createLogger, type Logger } from "./log.js";
import { createMetrics, type Metrics } from "./metrics.js";
import { openStore } from "./store/open-store.js";
import type { Store } from "./store/store.js";
import type { Fence, LeaseHolder } from "./store/types.js";
import type { CrashPoint, SyncContext } from "./sync/context.js";
import { createPageWindow } from "./sync/page-window.js";

export interface Runtime {
  /** The config as the file said when the process started. */
  config: Config;
  /**
   * The file as it says now (a ConfigError when it no longer loads): a pass reads its mirror's
   * declared sync config from it, so an edit made while the process runs is not undone.
   */
  readConfig(): Config;
  log: Logger;
  metrics: Metrics;
  store: Store;
  api: ApiClient;
  /**
   * The context of one pass; with `lease`, every write of the pass is fenced by it; `replica` is
   * the process the history names.
   */
  syncContext(signal: AbortSignal, lease?: Fence, replica?: LeaseHolder): SyncContext;
  close(): Promise<void>;
}

export interface RuntimeOptions {
  /** Take the single-writer lock (every command that writes). */
  lock: boolean;
  /** The API client's: whether a pass or the operator tries a failed call again. */
  retriedBy: RetriedBy;
  log?: Logger;
  metrics?: Metrics;
}

export async function createRuntime(
  config: Config,
  io: CommandIo,
  options: RuntimeOptions,
): Promise<Runtime> {
  const log = options.log ?? createIoLogger(io);
  // A one-shot command's registry is never scraped: prom-client's process metrics would only add a
  // GC observer and an event-loop timer to its pass.
  const metrics = options.metrics ?? createMetrics(new Registry(), { defaultMetrics: false });
  requireEnvironment(config);
  const store = await openStore(config, {
    lock: options.lock,
    log,
    retryEachTransaction: readRetryEachTransaction(io.env),
  });
  await applySearch(store, config.search.enabled, log);
  const api = createConfiguredApi(config, log, { retriedBy: options.retriedBy, metrics });
  const crashPoint = createCrashPoint(io.env);
  return {
    config,
    readConfig: () => loadConfig(config.file, io.env),
    log,
    metrics,
    store,
    api,
    syncContext: (signal, lease, replica) => ({
      store,
      api,
      log,
      metrics,
      now: () => new Date(),
      signal,
      sleep,
      crashPoint,
      ingestConcurrency: 4,
      triggerPosts: config.api.maxAttempts,
      exportPageSize: config.export.pageSize,
      pagesAheadPerRun: config.export.pagesAheadPerRun,
      pagesAhead: createPageWindow(config.export.pagesAheadPerPass),
      ...(lease === undefined ? {} : { lease }),
      ...(replica === undefined ? {} : { replica }),
    }),
    async close() {
      await api.close();
      await store.close();
    },
  };
}

/** The API client the config describes (its token from the environment), counted in `metrics` when given. */
export function createConfiguredApi(
  config: Config,
  log: Logger,
  options: { retriedBy: RetriedBy; metrics?: Metrics; maxAttempts?: number },
): ApiClient {
  const { metrics } = options;
  return createApiClient({
    baseUrl: config.api.baseUrl,
    token: requireToken(config),
    tokenEnv: config.api.tokenEnv,
    timeoutMs: config.api.timeoutSeconds * 1000,
    maxAttempts: options.maxAttempts ?? config.api.maxAttempts,
    retriedBy: options.retriedBy,
    log,
    ...(metrics && {
      onRequest: (r) => {
        metrics.apiRequests.inc({ method: r.method, route: r.route, code: r.code });
        metrics.apiRequestDuration.observe({ method: r.method, route: r.route }, r.durationSeconds);
      },
    }),
  });
}

/** The command's logger: JSON lines on stderr, or readable lines when stderr is a terminal. */
export function createIoLogger(io: CommandIo): Logger {
  return createLogger({ level: readLogLevel(io.env), name: "syncmirror", human: io.stderrIsTty === true });
}

/** `search.enabled` decides whether the search index exists (see `SearchIndex` in store/store.ts). */
async function applySearch(store: Store, enabled: boolean, log: Logger): Promise<void> {
  const startedMs = performance.now();
  try {
    const applied = await store.search.apply(enabled);
    const ms = Math.round(performance.now() - startedMs);
    if (applied?.action === "built") log.info({ indexed: applied.indexed, ms }, "search index built");
    if (applied?.action === "dropped") log.info({ ms }, "search disabled: index dropped");
  } catch (error) {
    await store.close();
    throw error;
  }
}

async function sleep(ms: number, signal: AbortSignal): Promise<void> {
  try {
    await sleepTimer(ms, undefined, { signal });
  } catch (error) {
    if (signal.aborted) throw new AbortedError("stopped while waiting", { cause: error });
    throw error;
  }
}

/** The SYNCMIRROR_CRASH_AT seam (`readCrashAt`): a no-op unless the variable is set. */
export function createCrashPoint(env: CommandIo["env"]): (point: CrashPoint) => void {
  const crashAt = readCrashAt(env);
  if (crashAt === null) return () => {};
  let hits = 0;
  return (point) => {
    if (point !== crashAt.point) return;
    hits++;
    if (hits === crashAt.hit) process.kill(process.pid, crashAt.signal);
  };
}
