/**
 * What every command that touches the mirror shares: logger, metrics, database, API client and
 * the sync context, built from a loaded config, and released last-opened-first.
 */
import { setTimeout as sleepTimer } from "node:timers/promises";
import { Registry } from "prom-client";
import { type ApiClient, createApiClient } from "./api/client.js";
import type { CommandIo } from "./commands/command.js";
import { type Config, readCrashAt, readLogLevel, requireToken } from "./config.js";
import { AbortedError } from "./errors.js";
import { createLogger, type Logger } from "./log.js";
import { createMetrics, type Metrics } from "./metrics.js";
import { type OpenDatabase, openDatabase } from "./store/db.js";
import { createStore, type Store } from "./store/store.js";
import type { CrashPoint, SyncContext } from "./sync/context.js";

export interface Runtime {
  config: Config;
  log: Logger;
  metrics: Metrics;
  database: OpenDatabase;
  store: Store;
  api: ApiClient;
  syncContext(signal: AbortSignal): SyncContext;
  close(): Promise<void>;
}

export interface RuntimeOptions {
  /** Take the single-writer lock (every command that writes). */
  lock: boolean;
  log?: Logger;
  metrics?: Metrics;
}

export function createRuntime(config: Config, io: CommandIo, options: RuntimeOptions): Runtime {
  const log = options.log ?? createLogger({ level: readLogLevel(io.env), name: "syncmirror" });
  const metrics = options.metrics ?? createMetrics(new Registry());
  const token = requireToken(config);
  const database = openDatabase(config.database.path, { lock: options.lock });
  const store = createStore(database);
  const api = createApiClient({
    baseUrl: config.api.baseUrl,
    token,
    tokenEnv: config.api.tokenEnv,
    timeoutMs: config.api.timeoutSeconds * 1000,
    maxAttempts: config.api.maxAttempts,
    log,
    onRequest: (r) => {
      metrics.apiRequests.inc({ method: r.method, route: r.route, code: r.code });
      metrics.apiRequestDuration.observe({ method: r.method, route: r.route }, r.durationSeconds);
    },
  });
  const crashPoint = createCrashPoint(io.env);
  return {
    config,
    log,
    metrics,
    database,
    store,
    api,
    syncContext: (signal) => ({
      store,
      api,
      log,
      metrics,
      now: () => new Date(),
      signal,
      sleep,
      crashPoint,
      ingestConcurrency: 4,
    }),
    async close() {
      await api.close();
      database.close();
    },
  };
}

async function sleep(ms: number, signal: AbortSignal): Promise<void> {
  try {
    await sleepTimer(ms, undefined, { signal });
  } catch (error) {
    if (signal.aborted) throw new AbortedError("stopped while waiting", { cause: error });
    throw error;
  }
}

function createCrashPoint(env: CommandIo["env"]): (point: CrashPoint) => void {
  const crashAt = readCrashAt(env);
  if (crashAt === null) return () => {};
  let hits = 0;
  return (point) => {
    if (point !== crashAt.point) return;
    hits++;
    if (hits === crashAt.hit) process.kill(process.pid, "SIGKILL");
  };
}
