/**
 * A simulator on loopback, a fresh database with the real migrations (a SQLite file, or a
 * PostgreSQL database of its own when the suite runs as vitest's `postgres` project), a config
 * file pointing at both, and two ways to run a pass: the engine in-process, or the real CLI as a
 * child process.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { Registry } from "prom-client";
import { stringify } from "yaml";
import type { CommandIo } from "../../src/commands/command.js";
import { loadConfig } from "../../src/config.js";
import { createLeaseHolder } from "../../src/lease-holder.js";
import { silentLogger } from "../../src/log.js";
import { createMetrics, type Metrics } from "../../src/metrics.js";
import { withMirrorLease } from "../../src/mirror-lease.js";
import { createRuntime } from "../../src/runtime.js";
import { type Simulator, type SimulatorOptions, startSimulator } from "../../src/simulator/index.js";
import type { PassOptions, SyncContext } from "../../src/sync/context.js";
import type { MirrorSummary } from "../../src/sync/summary.js";
import { syncMirror } from "../../src/sync/sync-mirror.js";
import { bindMirror } from "../../src/sync-configs/bind.js";
import { spawnCli } from "./daemon.js";
import { queryPostgres, TEST_DIALECT, type TestDialect } from "./dialect.js";
import { closeSync } from "./pg-sync.js";
import { createTestDatabase } from "./postgres.js";

export const TOKEN_ENV = "SYNCMIRROR_TEST_TOKEN";
/** On PostgreSQL, the config's `database.url_env`: the harness sets it in `env`. */
export const DATABASE_URL_ENV = "SYNCMIRROR_TEST_MIRROR_DATABASE_URL";

export interface HarnessOptions {
  /** The store; default: the suite's (TEST_DIALECT). */
  dialect?: TestDialect;
  sim?: SimulatorOptions;
  /** Merged into `defaults:` (fast polling is already set). */
  defaults?: Record<string, unknown>;
  /** Extra keys for the one mirror, named `main`. */
  mirror?: Record<string, unknown>;
  maxAttempts?: number;
  /** Merged into `api:` (e.g. `timeout_seconds`). */
  api?: Record<string, unknown>;
  /** The `export:` section (pages fetched ahead), when given. */
  export?: Record<string, unknown>;
}

export interface Harness {
  dialect: TestDialect;
  sim: Simulator;
  dir: string;
  /** The SQLite file (unused when the suite runs against PostgreSQL). */
  dbPath: string;
  /** The PostgreSQL database's URL when the suite runs against PostgreSQL. */
  databaseUrl: string | undefined;
  configPath: string;
  env: Record<string, string | undefined>;
  metrics: Metrics;
  /**
   * One pass of `main` (or of the config's mirror `options.mirror`) in this process, through real
   * HTTP and the real database file; `seams.log` (default: silent) is the runtime's logger, the
   * store's included; `now` and `sleep` put the pass's polling and run_timeout_minutes on a clock
   * of the test's; `leaseSeconds` runs the pass under the mirror's lease of that length, renewed
   * and fencing every write as `syncmirror sync` does.
   */
  sync(
    options?: Partial<PassOptions> & { mirror?: string },
    seams?: Partial<Pick<SyncContext, "crashPoint" | "pagesAhead" | "log" | "now" | "sleep">> & {
      leaseSeconds?: number;
    },
  ): Promise<MirrorSummary>;
  /** The real CLI as a child process. */
  cli(
    args: string[],
    extraEnv?: Record<string, string>,
  ): Promise<{ code: number | null; stdout: string; stderr: string }>;
  /** A read-only view of the database for assertions. */
  query<T = Record<string, unknown>>(sql: string, ...params: unknown[]): T[];
  writeConfig(): void;
  close(): Promise<void>;
}

export async function createHarness(options: HarnessOptions = {}): Promise<Harness> {
  const sim = await startSimulator(options.sim);
  const dir = mkdtempSync(join(tmpdir(), "syncmirror-test-"));
  const dbPath = join(dir, "mirror.db");
  const configPath = join(dir, "syncmirror.yaml");
  const env: Record<string, string | undefined> = {
    ...process.env,
    [TOKEN_ENV]: sim.token,
    LOG_LEVEL: "warn",
  };
  const metrics = createMetrics(new Registry(), { defaultMetrics: false });
  const dialect = options.dialect ?? TEST_DIALECT;
  const pgDatabase = dialect === "postgres" ? await createTestDatabase() : undefined;
  if (pgDatabase) env[DATABASE_URL_ENV] = pgDatabase.url;
  const writeConfig = () =>
    writeFileSync(
      configPath,
      stringify({
        api: {
          base_url: sim.baseUrl,
          token_env: TOKEN_ENV,
          timeout_seconds: 10,
          max_attempts: options.maxAttempts ?? 4,
          ...options.api,
        },
        database: pgDatabase ? { url_env: DATABASE_URL_ENV } : { path: dbPath },
        http: { listen: "127.0.0.1:0" },
        ...(options.export ? { export: options.export } : {}),
        defaults: { poll_initial_seconds: 0.01, poll_max_seconds: 0.05, ...options.defaults },
        mirrors: [{ name: "main", sync_config_id: sim.syncConfigId, ...options.mirror }],
      }),
    );
  writeConfig();
  const io: CommandIo = {
    stdout: process.stdout,
    stderr: process.stderr,
    env,
    signal: new AbortController().signal,
    isTty: false,
  };

  return {
    dialect,
    sim,
    dir,
    dbPath,
    databaseUrl: pgDatabase?.url,
    configPath,
    env,
    metrics,
    writeConfig,
    async sync({ mirror = "main", ...passOptions } = {}, { leaseSeconds, ...seams } = {}) {
      const config = loadConfig(configPath, env);
      const runtime = await createRuntime(config, io, {
        lock: true,
        retriedBy: "next pass",
        log: seams.log ?? silentLogger(),
        metrics,
      });
      try {
        const configured = config.mirrors.find((m) => m.name === mirror);
        if (!configured) throw new Error(`no mirror ${mirror}`);
        const bound = await bindMirror(configured, runtime.store);
        const options = { full: false, allowMassDelete: false, dryRun: false, ...passOptions };
        if (leaseSeconds === undefined) {
          return await syncMirror(bound, { ...runtime.syncContext(io.signal), ...seams }, options);
        }
        const { store, log } = runtime;
        const holder = createLeaseHolder();
        const leased = await withMirrorLease(
          { store, mirror, holder, leaseSeconds, signal: io.signal, log, metrics },
          (signal, fence) =>
            syncMirror(bound, { ...runtime.syncContext(signal, fence, holder), ...seams }, options),
        );
        if (!leased.taken) throw new Error(`the lease of mirror ${mirror} is held elsewhere`);
        return leased.value;
      } finally {
        await runtime.close();
      }
    },
    async cli(args, extraEnv = {}) {
      const p = spawnCli([...args, "--config", configPath], { ...env, ...extraEnv });
      const { code } = await p.exited;
      return { code, stdout: p.stdout(), stderr: p.stderr() };
    },
    query(sql, ...params) {
      if (pgDatabase) return queryPostgres(pgDatabase.url, sql, params);
      const db = new Database(dbPath, { readonly: true });
      try {
        return db.prepare(sql).all(...params) as never;
      } finally {
        db.close();
      }
    },
    async close() {
      await sim.close();
      if (pgDatabase) {
        closeSync(pgDatabase.url);
        await pgDatabase.release();
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Live keys a user can see through `main`. */
export function visibleKeys(h: Harness, userEmail: string): string[] {
  return h
    .query<{ key: string }>(
      `SELECT a.key FROM resource_access a JOIN resources r ON r.key = a.key
       WHERE a.mirror = 'main' AND a.user_email = ? AND r.deleted_at IS NULL ORDER BY a.key`,
      userEmail,
    )
    .map((r) => r.key);
}

/** The simulator's truth: keys of live documents each user can see. */
export function expectedKeys(sim: Simulator, userEmail: string): string[] {
  return sim.docs
    .list()
    .filter((d) => !d.deleted && d.visibleTo.includes(userEmail))
    .map((d) => d.key)
    .sort();
}
