/**
 * A simulator on loopback, a fresh SQLite file with the real migrations, a config file pointing
 * at both, and two ways to run a pass: the engine in-process, or the real CLI as a child process.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { Registry } from "prom-client";
import { stringify } from "yaml";
import type { CommandIo } from "../../src/commands/command.js";
import { loadConfig } from "../../src/config.js";
import { silentLogger } from "../../src/log.js";
import { createMetrics, type Metrics } from "../../src/metrics.js";
import { createRuntime } from "../../src/runtime.js";
import { type Simulator, type SimulatorOptions, startSimulator } from "../../src/simulator/index.js";
import type { PassOptions } from "../../src/sync/context.js";
import type { MirrorSummary } from "../../src/sync/summary.js";
import { syncMirror } from "../../src/sync/sync-mirror.js";

export const TOKEN_ENV = "SYNCMIRROR_TEST_TOKEN";
const CLI = join(import.meta.dirname, "..", "..", "dist", "cli.js");

export interface HarnessOptions {
  sim?: SimulatorOptions;
  /** Merged into `defaults:` (fast polling is already set). */
  defaults?: Record<string, unknown>;
  /** Extra keys for the one mirror, named `main`. */
  mirror?: Record<string, unknown>;
  maxAttempts?: number;
  /** Merged into `api:` (e.g. `timeout_seconds`). */
  api?: Record<string, unknown>;
}

export interface Harness {
  sim: Simulator;
  dir: string;
  dbPath: string;
  configPath: string;
  env: Record<string, string | undefined>;
  metrics: Metrics;
  /** One pass of `main` in this process, through real HTTP and the real database file. */
  sync(options?: Partial<PassOptions>): Promise<MirrorSummary>;
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
        database: { path: dbPath },
        http: { listen: "127.0.0.1:0" },
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
    sim,
    dir,
    dbPath,
    configPath,
    env,
    metrics,
    writeConfig,
    async sync(passOptions = {}) {
      const config = loadConfig(configPath, env);
      const runtime = createRuntime(config, io, { lock: true, log: silentLogger(), metrics });
      try {
        const mirror = config.mirrors[0];
        if (!mirror) throw new Error("no mirror");
        return await syncMirror(mirror, runtime.syncContext(io.signal), {
          full: false,
          allowMassDelete: false,
          dryRun: false,
          ...passOptions,
        });
      } finally {
        await runtime.close();
      }
    },
    cli(args, extraEnv = {}) {
      return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, [CLI, ...args, "--config", configPath], {
          env: { ...env, ...extraEnv },
          stdio: ["ignore", "pipe", "pipe"],
        });
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (d: Buffer) => {
          stdout += d.toString();
        });
        child.stderr.on("data", (d: Buffer) => {
          stderr += d.toString();
        });
        child.on("error", reject);
        child.on("close", (code) => resolve({ code, stdout, stderr }));
      });
    },
    query(sql, ...params) {
      const db = new Database(dbPath, { readonly: true });
      try {
        return db.prepare(sql).all(...params) as never;
      } finally {
        db.close();
      }
    },
    async close() {
      await sim.close();
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
