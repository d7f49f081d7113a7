/**
 * The workloads, each one measured child process against a simulator in another process: the
 * mirror (`syncmirror sync --json`), the naive client and the limit client.
 */
import { join } from "node:path";
import { DEFAULT_EXPORT_PAGE_SIZE } from "../src/config.js";
import type { Measured } from "./measure.js";
import { runMeasured } from "./measure.js";
import {
  createMirrorDb,
  type DbFacts,
  dbFacts,
  type MirrorDb,
  type MirrorSetup,
  type Phases,
  runSyncPass,
  TOKEN_ENV,
} from "./mirror.js";
import { pgFacts } from "./pg-server.js";
import { countByRoute, mirrorPolling, type PollingStats, type RouteCount } from "./requests.js";
import type { SimProcess } from "./sim-process.js";

export type Client = "syncmirror" | "naive" | "limit";

export interface WorkloadResult {
  id: string;
  title: string;
  client: Client;
  wallMs: number;
  cpuSeconds: number;
  peakRssKb: number;
  /** Exported resource rows read (a key visible to k users counts k times). */
  rows: number;
  /** Distinct keys among them. */
  uniqueKeys: number;
  /** CPU seconds the simulator spent serving this workload. */
  simCpuSeconds: number;
  requests: RouteCount[];
  totalRequests: number;
  /** Most export requests open at the simulator at once (its request log's `inFlight`). */
  exportInFlight: number;
  db: DbFacts | undefined;
  phases: Phases | undefined;
  polling: PollingStats | undefined;
  /** Client-specific figures (upserted, unchanged, write time...). */
  notes: Record<string, number | string>;
}

export interface BenchContext {
  /** dist/cli.js: runs the simulator. */
  cli: string;
  /** The build measured as the mirror (dist/cli.js unless --mirror-cli). */
  mirrorCli: string;
  benchDir: string;
  dir: string;
  pollSeconds: number;
  pollMaxSeconds: number;
  cpuProfDir: string | undefined;
  log(line: string): void;
}

/** Clears the simulator's request log, runs `fn`, and attaches what the simulator saw. */
async function observed(
  sim: SimProcess,
  fn: () => Promise<
    Omit<WorkloadResult, "simCpuSeconds" | "requests" | "totalRequests" | "polling" | "exportInFlight">
  >,
  pollingRuns?: number,
): Promise<WorkloadResult> {
  await sim.clearRequests();
  const cpuBefore = sim.cpuSeconds();
  const result = await fn();
  const simCpuSeconds = sim.cpuSeconds() - cpuBefore;
  const entries = await sim.requests();
  return {
    ...result,
    simCpuSeconds,
    requests: countByRoute(entries),
    totalRequests: entries.length,
    exportInFlight: Math.max(
      0,
      ...entries.filter((e) => e.route === "/sync-task/{sync_id}/export").map((e) => e.inFlight),
    ),
    polling: pollingRuns === undefined ? undefined : mirrorPolling(entries, pollingRuns),
  };
}

const cpu = (m: Measured) => m.userSeconds + m.systemSeconds;

export function mirrorSetup(
  ctx: BenchContext,
  sim: SimProcess,
  name: string,
  exportPaging?: MirrorSetup["exportPaging"],
): MirrorSetup {
  return {
    exportPaging,
    cli: ctx.mirrorCli,
    dir: ctx.dir,
    name,
    sim,
    pollSeconds: ctx.pollSeconds,
    pollMaxSeconds: ctx.pollMaxSeconds,
    cpuProfDir: ctx.cpuProfDir,
  };
}

/** One mirror pass (`sync --json`, plus `--full` when asked) over `db`. */
export async function mirrorPass(
  ctx: BenchContext,
  sim: SimProcess,
  setup: MirrorSetup,
  db: MirrorDb,
  w: { id: string; title: string; full: boolean; pollingRuns?: number; nodeOptions?: string },
): Promise<WorkloadResult> {
  ctx.log(
    `${w.id}: syncmirror sync${w.full ? " --full" : ""}${w.nodeOptions ? ` (NODE_OPTIONS=${w.nodeOptions})` : ""} ...`,
  );
  const result = await observed(
    sim,
    async () => {
      const args = w.full ? ["--full"] : [];
      const { measured, summary, phases } = await runSyncPass(setup, db, args, w.nodeOptions);
      const facts = db.databaseUrl ? await pgFacts(db.databaseUrl) : dbFacts(db.dbPath);
      const { upserted, unchanged, rejected } = summary.counts;
      return {
        id: w.id,
        title: w.title,
        client: "syncmirror" as const,
        wallMs: measured.wallMs,
        cpuSeconds: cpu(measured),
        peakRssKb: measured.peakRssKb,
        rows: upserted + unchanged + rejected,
        // Every live key was seen by a full snapshot; an incremental's distinct keys are those it changed.
        uniqueKeys: summary.mode === "full" ? facts.resources : upserted,
        db: facts,
        phases,
        notes: {
          mode: summary.mode,
          upserted,
          unchanged,
          deleted: summary.counts.deleted,
          revoked: summary.counts.access_revoked,
        },
      };
    },
    w.pollingRuns,
  );
  ctx.log(`${w.id}: ${summarize(result)}`);
  return result;
}

export function createDb(
  ctx: BenchContext,
  sim: SimProcess,
  name: string,
  exportPaging?: MirrorSetup["exportPaging"],
  databaseUrl?: string,
) {
  const setup = { ...mirrorSetup(ctx, sim, name, exportPaging), databaseUrl };
  return { setup, db: createMirrorDb(setup) };
}

/** The documentation-example client over a fresh database. */
export async function naivePass(
  ctx: BenchContext,
  sim: SimProcess,
  w: { id: string; title: string; pollingRuns?: number },
): Promise<WorkloadResult> {
  ctx.log(`${w.id}: naive client ...`);
  const dbPath = join(ctx.dir, `${w.id}.db`);
  const result = await observed(
    sim,
    async () => {
      const measured = await runMeasured([join(ctx.benchDir, "naive-client.js")], {
        dir: ctx.dir,
        env: {
          ...process.env,
          [TOKEN_ENV]: sim.token,
          NAIVE_TOKEN_ENV: TOKEN_ENV,
          NAIVE_BASE_URL: sim.baseUrl,
          NAIVE_CONFIG_ID: sim.syncConfigId,
          NAIVE_DB: dbPath,
          NAIVE_SLEEP_MS: String(Math.round(ctx.pollSeconds * 1000)),
        },
      });
      const out = parseOutput<{ rows: number; callsPerRound: number[] }>(measured, "naive client");
      const facts = dbFacts(dbPath);
      return {
        id: w.id,
        title: w.title,
        client: "naive" as const,
        wallMs: measured.wallMs,
        cpuSeconds: cpu(measured),
        peakRssKb: measured.peakRssKb,
        rows: out.rows,
        uniqueKeys: facts.resources,
        db: facts,
        phases: undefined,
        notes: {
          rounds: out.callsPerRound.length,
          maxCallsPerRound: Math.max(0, ...out.callsPerRound),
        },
      };
    },
    w.pollingRuns,
  );
  ctx.log(`${w.id}: ${summarize(result)}`);
  return result;
}

/**
 * The limit client: fetch and parse only, or also write the rows in one bare transaction, with
 * `inFlight` export requests open at once (the mirror's measured `exportInFlight`).
 */
export async function limitPass(
  ctx: BenchContext,
  sim: SimProcess,
  w: {
    id: string;
    title: string;
    mode: LimitMode;
    inFlight: number;
    databaseUrl?: string;
    /** The SQLite file's name when the pass is repeated (each needs a fresh one); else `id`. */
    dbName?: string;
  },
): Promise<WorkloadResult> {
  ctx.log(`${w.id}: limit client (${w.mode}, ${w.inFlight} requests in flight) ...`);
  const dbPath = join(ctx.dir, `${w.dbName ?? w.id}.db`);
  const result = await observed(sim, async () => {
    const measured = await runMeasured([join(ctx.benchDir, "limit-client.js")], {
      dir: ctx.dir,
      nodeFlags: ctx.cpuProfDir ? ["--cpu-prof", `--cpu-prof-dir=${ctx.cpuProfDir}`] : [],
      env: {
        ...process.env,
        [TOKEN_ENV]: sim.token,
        LIMIT_TOKEN_ENV: TOKEN_ENV,
        LIMIT_MODE: w.mode,
        LIMIT_BASE_URL: sim.baseUrl,
        LIMIT_CONFIG_ID: sim.syncConfigId,
        LIMIT_IN_FLIGHT: String(Math.max(1, w.inFlight)),
        LIMIT_PAGE_SIZE: String(DEFAULT_EXPORT_PAGE_SIZE),
        LIMIT_POLL_MS: String(Math.round(ctx.pollSeconds * 1000)),
        LIMIT_POLL_MAX_MS: String(Math.round(ctx.pollMaxSeconds * 1000)),
        LIMIT_DB: dbPath,
        ...(w.databaseUrl ? { LIMIT_PG_URL: w.databaseUrl } : {}),
      },
    });
    const out = parseOutput<{
      rows: number;
      uniqueKeys: number;
      pages: number;
      bytes: number;
      writeMs: number;
      medianContentChars: number;
    }>(measured, "limit client");
    return {
      id: w.id,
      title: w.title,
      client: "limit" as const,
      wallMs: measured.wallMs,
      cpuSeconds: cpu(measured),
      peakRssKb: measured.peakRssKb,
      rows: out.rows,
      uniqueKeys: out.uniqueKeys,
      db: await limitFacts(w.mode, dbPath, w.databaseUrl),
      phases: undefined,
      notes: {
        pages: out.pages,
        exportMB: round(out.bytes / 1e6, 1),
        medianContentChars: out.medianContentChars,
        writeMs: Math.round(out.writeMs),
      },
    };
  });
  ctx.log(`${w.id}: ${summarize(result)}`);
  return result;
}

/** The limit client's modes: fetch + parse, and also a bare write to SQLite or PostgreSQL. */
export type LimitMode = "fetch" | "store" | "pg-store";

async function limitFacts(mode: LimitMode, dbPath: string, databaseUrl: string | undefined) {
  const tables = { resources: "resources", access: "access" };
  if (mode === "store") return dbFacts(dbPath, tables);
  if (mode === "pg-store" && databaseUrl) return pgFacts(databaseUrl, tables);
  return undefined;
}

function parseOutput<T>(measured: Measured, what: string): T {
  try {
    if (measured.code === 0) return JSON.parse(measured.stdout) as T;
  } catch {
    // reported below
  }
  throw new Error(`${what} exited ${measured.code}: ${measured.stdout}\n${measured.stderr.slice(-2000)}`);
}

function summarize(r: WorkloadResult): string {
  const s = r.wallMs / 1000;
  return `${s.toFixed(1)} s, ${r.rows} rows (${Math.round(r.rows / s)}/s), ${r.uniqueKeys} keys, peak RSS ${Math.round(r.peakRssKb / 1024)} MB, cpu ${r.cpuSeconds.toFixed(1)} s, sim cpu ${r.simCpuSeconds.toFixed(1)} s, ${r.totalRequests} requests, at most ${r.exportInFlight} exports in flight`;
}

export function round(value: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/**
 * Runs a workload `times` times (each on its own fresh state) and keeps the run with the median
 * wall time, with the median peak RSS and CPU figures and the spread of peak RSS in its notes:
 * one peak RSS reading varies by a tenth from run to run.
 */
export async function repeated(
  times: number,
  run: (attempt: number) => Promise<WorkloadResult>,
): Promise<WorkloadResult> {
  const all: WorkloadResult[] = [];
  for (let attempt = 1; attempt <= times; attempt++) all.push(await run(attempt));
  const median = (f: (r: WorkloadResult) => number) => {
    const sorted = all.map(f).sort((a, b) => a - b);
    return sorted[(sorted.length - 1) >> 1] ?? Number.NaN;
  };
  const wallMs = median((r) => r.wallMs);
  const chosen = all.find((r) => r.wallMs === wallMs) ?? (all[0] as WorkloadResult);
  if (times === 1) return chosen;
  const rss = all.map((r) => Math.round(r.peakRssKb / 1024));
  return {
    ...chosen,
    cpuSeconds: median((r) => r.cpuSeconds),
    simCpuSeconds: median((r) => r.simCpuSeconds),
    peakRssKb: median((r) => r.peakRssKb),
    notes: { ...chosen.notes, runs: times, peakRssMB: `${Math.min(...rss)}-${Math.max(...rss)}` },
  };
}
