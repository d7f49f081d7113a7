/**
 * The measured syncmirror process: a config file pointing at the simulator, then
 * `node dist/cli.js sync --json [--full] --config FILE` as a child, timed and sampled.
 */
import { statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { type Measured, runMeasured } from "./measure.js";
import type { SimProcess } from "./sim-process.js";

export const TOKEN_ENV = "BENCH_SIM_TOKEN";
/**
 * The container's other memory setting (the Dockerfile's ENV), applied with its NODE_OPTIONS: glibc
 * then keeps two malloc arenas instead of one per thread (SQLite, undici and V8's helper threads
 * each allocate), 7-12 MB less peak RSS in a cold pass at 10k and 100k rows for no measurable CPU.
 */
export const CONTAINER_MALLOC_ARENA_MAX = "2";
/** Names the variable that carries a PostgreSQL store's URL (the config never holds it). */
export const DATABASE_URL_ENV = "BENCH_DATABASE_URL";

export interface MirrorSetup {
  cli: string;
  dir: string;
  name: string;
  sim: SimProcess;
  pollSeconds: number;
  pollMaxSeconds: number;
  cpuProfDir: string | undefined;
  /** The mirror's `export:` section; absent: its defaults. */
  exportPaging?: { pages_ahead_per_run: number; pages_ahead_per_pass: number };
  /** A PostgreSQL database for the store; absent: a SQLite file in `dir`. */
  databaseUrl?: string;
}

export interface MirrorDb {
  configPath: string;
  dbPath: string;
  databaseUrl: string | undefined;
}

/** The parts of `sync --json`'s per-mirror summary the report uses. */
export interface PassSummary {
  mode: string;
  outcome: string;
  counts: { upserted: number; unchanged: number; rejected: number; deleted: number; access_revoked: number };
  runs: Record<string, number>;
  duration_seconds: number;
}

export interface Phases {
  /** Process start to the trigger POST answered: node start, config, migrations. */
  startupMs: number;
  /** Trigger to the first export page requested: waiting for runs. */
  waitMs: number;
  /** First export page requested to the last one answered. */
  ingestMs: number;
  /** Last export page answered to the pass's final log line: last page, sweep, settle. */
  tailMs: number;
  /** Final log line to process exit. */
  exitMs: number;
}

export interface PassResult {
  measured: Measured;
  summary: PassSummary;
  phases: Phases | undefined;
}

/** Writes a config (JSON is YAML) for one mirror named `bench` over a fresh database. */
export function createMirrorDb(setup: MirrorSetup): MirrorDb {
  const dbPath = join(setup.dir, `${setup.name}.db`);
  const configPath = join(setup.dir, `${setup.name}.yaml`);
  const config = {
    api: { base_url: setup.sim.baseUrl, token_env: TOKEN_ENV, timeout_seconds: 120, max_attempts: 3 },
    database: setup.databaseUrl ? { url_env: DATABASE_URL_ENV } : { path: dbPath },
    http: { listen: "127.0.0.1:0" },
    ...(setup.exportPaging ? { export: setup.exportPaging } : {}),
    defaults: { poll_initial_seconds: setup.pollSeconds, poll_max_seconds: setup.pollMaxSeconds },
    mirrors: [{ name: "bench", sync_config_id: setup.sim.syncConfigId }],
  };
  writeFileSync(configPath, `${JSON.stringify(config, null, 2)}\n`);
  return { configPath, dbPath, databaseUrl: setup.databaseUrl };
}

/** One `sync --json` pass; throws unless the mirror succeeded. */
export async function runSyncPass(
  setup: MirrorSetup,
  db: MirrorDb,
  extra: string[],
  nodeOptions?: string,
): Promise<PassResult> {
  const startedAtMs = Date.now();
  const env: NodeJS.ProcessEnv = { ...process.env, [TOKEN_ENV]: setup.sim.token, LOG_LEVEL: "debug" };
  if (nodeOptions) {
    env.NODE_OPTIONS = nodeOptions;
    env.MALLOC_ARENA_MAX = CONTAINER_MALLOC_ARENA_MAX;
  }
  if (db.databaseUrl) env[DATABASE_URL_ENV] = db.databaseUrl;
  const measured = await runMeasured([setup.cli, "sync", "--json", ...extra, "--config", db.configPath], {
    dir: setup.dir,
    env,
    nodeFlags: setup.cpuProfDir ? ["--cpu-prof", `--cpu-prof-dir=${setup.cpuProfDir}`] : [],
  });
  writeFileSync(join(setup.dir, `${setup.name}-${Date.now()}.log`), measured.stderr);
  let summary: PassSummary | undefined;
  try {
    summary = (JSON.parse(measured.stdout) as { mirrors: PassSummary[] }).mirrors[0];
  } catch {
    // reported below with the log tail
  }
  if (summary?.outcome !== "succeeded") {
    const tail = measured.stderr.split("\n").slice(-15).join("\n");
    throw new Error(`sync ${extra.join(" ")} exited ${measured.code}: ${measured.stdout}\n${tail}`);
  }
  return { measured, summary, phases: phasesOf(measured, startedAtMs) };
}

/** Timestamps of the pass's JSON log lines (pino, LOG_LEVEL=debug) split it into phases. */
function phasesOf(measured: Measured, startedAtMs: number): Phases | undefined {
  const lines: { time: string; msg?: string; route?: string; ms?: number }[] = [];
  for (const line of measured.stderr.split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      lines.push(JSON.parse(line));
    } catch {
      // not a log line
    }
  }
  const at = (l: { time: string } | undefined) => (l ? Date.parse(l.time) : Number.NaN);
  const requests = lines.filter((l) => l.msg === "api request");
  const trigger = requests.find((l) => l.route === "/sync-task" && l.ms !== undefined);
  const exports = requests.filter((l) => l.route === "/sync-task/{sync_id}/export");
  const first = exports[0];
  const last = exports.at(-1);
  const final = lines.at(-1);
  if (!trigger || !first || !last || !final) return undefined;
  const exitAt = startedAtMs + measured.wallMs;
  return {
    startupMs: at(trigger) - startedAtMs,
    waitMs: at(first) - (first.ms ?? 0) - at(trigger),
    ingestMs: at(last) - (at(first) - (first.ms ?? 0)),
    tailMs: at(final) - at(last),
    exitMs: exitAt - at(final),
  };
}

export interface DbFacts {
  bytes: number;
  resources: number;
  access: number;
  changes: number;
}

/** Size on disk (database plus any -wal left) and row counts of the public tables. */
export function dbFacts(
  path: string,
  tables = { resources: "resources", access: "resource_access" },
): DbFacts {
  let bytes = 0;
  for (const suffix of ["", "-wal"]) {
    try {
      bytes += statSync(`${path}${suffix}`).size;
    } catch {
      // no such file
    }
  }
  const db = new Database(path, { readonly: true });
  try {
    const count = (table: string) =>
      (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    const hasChanges = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'changes'").get() !== undefined;
    return {
      bytes,
      resources: count(tables.resources),
      access: count(tables.access),
      changes: hasChanges ? count("changes") : 0,
    };
  } finally {
    db.close();
  }
}
