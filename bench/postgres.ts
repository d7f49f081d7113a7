/**
 * The PostgreSQL store beside SQLite at the same size: the cold full mirror and the unchanged full
 * snapshot on a fresh database, and the limit client's bare multi-row INSERT into unindexed tables
 * in one transaction (bench/bare-store.ts). Each runs in a database created for it and dropped
 * after. The measured process's CPU is the client's alone: the server's work is in other
 * processes, so the section also gives the server's CPU over the same span.
 */
import { readdirSync, readFileSync } from "node:fs";
import { type DelayProxy, startDelayProxy } from "./delay-proxy.js";
import { fixed, mb, type Results, rate } from "./figures.js";
import type { BenchOptions } from "./options.js";
import { postgresAvailable, withDatabase } from "./pg-server.js";
import { type ReplicaResult, replicaWorkload } from "./replicas.js";
import type { SimProcess } from "./sim-process.js";
import { type BenchContext, createDb, limitPass, mirrorPass, type WorkloadResult } from "./workloads.js";

export const SKIPPED = "skipped: no PostgreSQL server";

/** What the report says about the PostgreSQL sections beyond the workload results. */
export interface PostgresReport {
  /** Why the PostgreSQL workloads did not run (SKIPPED, or "not run: --postgres 0"). */
  skipped?: string;
  replicas?: ReplicaResult;
  /** Why the replica workload has no figures. */
  replicasSkipped?: string;
}

/**
 * The PostgreSQL workloads on the large simulator, after SQLite's (its edits already made): on the
 * local server, then (`delayMs` > 0) through a proxy that makes it as far away as another host.
 */
export async function postgresPasses(
  ctx: BenchContext,
  sim: SimProcess,
  adminUrl: string,
  inFlight: number,
  delayMs: number,
  add: (r: WorkloadResult) => void,
): Promise<void> {
  const where = [{ prefix: "pg", suffix: "PostgreSQL", delayMs: 0 }];
  if (delayMs > 0) where.push({ prefix: "pg-away", suffix: awayTitle(delayMs), delayMs });
  for (const w of where) {
    const reach = async (url: string, fn: (url: string, proxy?: DelayProxy) => Promise<void>) => {
      if (w.delayMs === 0) return fn(url);
      const proxy = await startDelayProxy(url, w.delayMs);
      try {
        await fn(proxy.url, proxy);
      } finally {
        await proxy.close();
      }
    };
    await withDatabase(adminUrl, `${w.prefix}-mirror`, (url) =>
      reach(url, async (dbUrl, proxy) => {
        const { setup, db } = createDb(ctx, sim, `${w.prefix}-mirror`, undefined, dbUrl);
        const pass = (id: string, title: string, full: boolean) =>
          withServerCpu(() =>
            withRoundTrips(proxy, () =>
              mirrorPass(ctx, sim, setup, db, { id: `${w.prefix}-${id}`, title, full }),
            ),
          );
        add(await pass("cold", `P1. Cold full mirror, ${w.suffix}`, false));
        add(await pass("full", `P3. Full snapshot, nothing changed, + sweep, ${w.suffix}`, true));
      }),
    );
    await withDatabase(adminUrl, `${w.prefix}-limit`, (url) =>
      reach(url, async (dbUrl, proxy) => {
        const title = `Limit: fetch + parse + bare multi-row INSERT, ${w.suffix}`;
        const id = `${w.prefix}-limit-store`;
        add(
          await withServerCpu(() =>
            withRoundTrips(proxy, () =>
              limitPass(ctx, sim, { id, title, mode: "pg-store", inFlight, databaseUrl: dbUrl }),
            ),
          ),
        );
      }),
    );
  }
}

const awayTitle = (delayMs: number) => `PostgreSQL ${delayMs} ms away each way`;

/**
 * Adds the round trips the pass took through the proxy to its notes: all of them, and those of
 * its page transactions with how many there were (see delay-proxy.ts).
 */
async function withRoundTrips(
  proxy: DelayProxy | undefined,
  fn: () => Promise<WorkloadResult>,
): Promise<WorkloadResult> {
  if (!proxy) return fn();
  const trips = proxy.roundTrips();
  const pages = proxy.pages();
  const result = await fn();
  const after = proxy.pages();
  return {
    ...result,
    notes: {
      ...result.notes,
      roundTrips: proxy.roundTrips() - trips,
      pageTransactions: after.pages - pages.pages,
      pageRoundTrips: after.roundTrips - pages.roundTrips,
    },
  };
}

/** Adds the PostgreSQL server's CPU seconds over `fn` to the result's notes. */
async function withServerCpu(fn: () => Promise<WorkloadResult>): Promise<WorkloadResult> {
  const before = serverCpuSeconds();
  const result = await fn();
  // The client's backends exit after it does; their CPU reaches the postmaster once reaped.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const cpu = serverCpuSeconds() - before;
  return Number.isFinite(cpu) ? { ...result, notes: { ...result.notes, serverCpuS: fixed(cpu, 1) } } : result;
}

/**
 * The local postmaster's CPU with that of its exited children (backends), in seconds; NaN when no
 * local server is visible. Other clients' backends that exit meanwhile count too: a rough figure.
 */
function serverCpuSeconds(): number {
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      if (!/postgres\0-D\0/.test(cmdline)) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      return [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0) / 100;
    } catch {
      // gone meanwhile
    }
  }
  return Number.NaN;
}

/** "## PostgreSQL beside SQLite": per store its cold and unchanged-full passes against its limit. */
export function postgresSection(
  results: Results,
  pg: PostgresReport,
  table: (header: string[], rows: (string | number)[][]) => string[],
): string[] {
  const head = ["## PostgreSQL beside SQLite", ""];
  if (pg.skipped) return [...head, pg.skipped, ""];
  const stores = [
    { store: "SQLite", ids: ["cold", "full"], limit: "limit-store" },
    { store: "PostgreSQL", ids: ["pg-cold", "pg-full"], limit: "pg-limit-store" },
    { store: "PostgreSQL, away", ids: ["pg-away-cold", "pg-away-full"], limit: "pg-away-limit-store" },
  ];
  const rows: (string | number)[][] = [];
  for (const { store, ids, limit } of stores) {
    const l = results.get(limit);
    for (const id of [...ids, limit]) {
      const w = results.get(id);
      if (!w) continue;
      const perRow = (r: WorkloadResult) => (r.cpuSeconds / r.rows) * 1e6;
      rows.push([
        store,
        w.title.replace(/, PostgreSQL.*$/, ""),
        w.rows,
        fixed(w.wallMs / 1000, 1),
        Math.round(rate(w)),
        fixed(w.cpuSeconds, 1),
        Math.round(perRow(w)),
        String(w.notes.serverCpuS ?? "-"),
        mb(w.peakRssKb),
        w.db ? fixed(w.db.bytes / 1e6, 1) : "-",
        l && id !== limit ? fixed(rate(w) / rate(l)) : "-",
        l && id !== limit ? fixed(perRow(w) / perRow(l)) : "-",
        w.notes.roundTrips === undefined ? "-" : String(w.notes.roundTrips),
        Number(w.notes.pageTransactions) > 0
          ? `${fixed(Number(w.notes.pageRoundTrips) / Number(w.notes.pageTransactions), 1)} (${w.notes.pageTransactions} pages)`
          : "-",
      ]);
    }
  }
  return [
    ...head,
    "The same simulator and rows for both stores (PostgreSQL's passes run after SQLite's, on a database of their own). " +
      "Each store's limit is the limit client writing the same rows bare, in one transaction, into unindexed tables of that store. " +
      '"PostgreSQL, away" is the same server through a TCP proxy in the bench that holds every chunk `--pg-delay-ms` (default 1) ms each way, ' +
      "so each statement's round trip costs about what it would to a database on another host (0 skips it). " +
      "Round trips are counted at the proxy (each time the client speaks after an answer reached it; statements it pipelines share one): all of the pass's, and their mean per page transaction (BEGIN to COMMIT; a run's first and last pages do a little more). " +
      "CPU s is the measured process's; SQLite works inside it, PostgreSQL mostly in its server, whose CPU (the postmaster and its exited backends, " +
      "so other clients of the server count too) is given beside it. DB MB: the file (SQLite) or pg_database_size (PostgreSQL).",
    "",
    ...table(
      [
        "Store",
        "Workload",
        "Rows",
        "Wall s",
        "Rows/s",
        "CPU s",
        "CPU µs/row",
        "Server CPU s",
        "Peak RSS MB",
        "DB MB",
        "Rows/s / limit",
        "CPU per row / limit",
        "Round trips",
        "Round trips / page",
      ],
      rows,
    ),
  ];
}

/** Whether the PostgreSQL workloads run: asked for, and a server answers at `adminUrl`. */
export async function probePostgres(
  options: BenchOptions,
  adminUrl: string,
  log: (line: string) => void,
): Promise<PostgresReport> {
  if (!options.postgres) return { skipped: "not run (`--postgres 0`)" };
  if (await postgresAvailable(adminUrl)) return {};
  log(`PostgreSQL workloads ${SKIPPED} at ${new URL(adminUrl).host}`);
  return { skipped: SKIPPED };
}

/** The replica workload into `report`; a failure is reported in its section, not thrown. */
export async function postgresReplicas(
  ctx: BenchContext,
  options: BenchOptions,
  adminUrl: string,
  report: PostgresReport,
): Promise<void> {
  if (report.skipped) report.replicasSkipped = report.skipped;
  else if (options.replicaMirrors === 0) report.replicasSkipped = "not run (`--replica-mirrors 0`)";
  else {
    try {
      report.replicas = await replicaWorkload(ctx, options, adminUrl);
    } catch (error) {
      ctx.log(`replicas failed: ${(error as Error).message}`);
      report.replicasSkipped = `failed: ${(error as Error).message}`;
    }
  }
}
