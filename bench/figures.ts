/** The figures built on the workloads: ratios, the goals they are judged against, and why. */

import { CONTAINER_MALLOC_ARENA_MAX } from "./mirror.js";
import type { BenchOptions } from "./options.js";
import { round, type WorkloadResult } from "./workloads.js";

export type Results = ReadonlyMap<string, WorkloadResult>;

export interface Goal {
  goal: string;
  target: string;
  measured: string;
  met: boolean | undefined;
}

export const mb = (kb: number) => round(kb / 1024);
export const rate = (r: WorkloadResult, n = r.rows) => n / (r.wallMs / 1000);
export const fixed = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");

export function ratios(results: Results) {
  const ratio = (a: string, b: string, f: (r: WorkloadResult) => number) => {
    const x = results.get(a);
    const y = results.get(b);
    return x && y ? f(x) / f(y) : Number.NaN;
  };
  const rows = (r: WorkloadResult) => rate(r);
  const wall = (r: WorkloadResult) => r.wallMs;
  const rss = (r: WorkloadResult) => r.peakRssKb;
  const store = results.get("limit-store");
  return {
    coldVsLimit: ratio("cold", "limit-store", rows),
    coldVsFetch: ratio("cold", "limit-fetch", rows),
    fullVsFetch: ratio("full", "limit-fetch", rows),
    storageRowsPerSecond: store ? store.rows / (Number(store.notes.writeMs) / 1000) : Number.NaN,
    naiveColdWall: ratio("naive-cold", "cold", wall),
    naiveColdRss: ratio("naive-cold", "cold", rss),
    naiveColdRows: ratio("naive-cold", "cold", rows),
    rssGrowth: ratio("cold", "cold-small", rss),
    coldCpuPerRowVsLimit: ratio("cold", "limit-store", (r) => r.cpuSeconds / r.rows),
    oneRunVsLimit: ratio("one-run", "limit-one-run", rows),
    oneRunVsSequential: ratio("one-run", "one-run-seq", rows),
    manyRunsVsLimit: ratio("many-runs", "limit-many-runs", rows),
    manyRunsVsSequential: ratio("many-runs", "many-runs-seq", rows),
    naiveRssGrowth: ratio("naive-cold", "naive-small", rss),
    pgAwayColdVsLimit: ratio("pg-away-cold", "pg-away-limit-store", rows),
    pgAwayFullVsLimit: ratio("pg-away-full", "pg-away-limit-store", rows),
    pgColdVsLimit: ratio("pg-cold", "pg-limit-store", rows),
    pgFullVsLimit: ratio("pg-full", "pg-limit-store", rows),
    pgAwayCpuPerRowVsSqlite: ratio("pg-away-cold", "cold", (r) => r.cpuSeconds / r.rows),
  };
}

/** Round trips per page transaction through the proxy (BEGIN to COMMIT), as the proxy counted them. */
function pageRoundTrips(results: Results, id: string): number {
  const notes = results.get(id)?.notes;
  return notes ? Number(notes.pageRoundTrips) / Number(notes.pageTransactions) : Number.NaN;
}

export function goals(results: Results): Goal[] {
  const r = ratios(results);
  const cold = results.get("cold");
  const poll = results.get("poll")?.polling;
  const maxList = poll ? Math.max(0, ...poll.listCallsPerRound) : Number.NaN;
  const allowed = poll ? Math.ceil(poll.runs / 100) : Number.NaN;
  const known = (n: number, ok: boolean) => (Number.isFinite(n) ? ok : undefined);
  return [
    {
      goal: "One large run at 100 ms latency vs the fetch-and-parse limit at the same requests in flight, rows/s",
      target: ">= 0.80",
      measured: fixed(r.oneRunVsLimit),
      met: known(r.oneRunVsLimit, r.oneRunVsLimit >= 0.8),
    },
    {
      goal: "Cold mirror CPU per row vs the limit (fetch + parse + bare write)",
      target: "<= 1.50",
      measured: fixed(r.coldCpuPerRowVsLimit),
      met: known(r.coldCpuPerRowVsLimit, r.coldCpuPerRowVsLimit <= 1.5),
    },
    {
      goal: "Unchanged full snapshot (with its sweep) vs the fetch-and-parse limit, rows/s",
      target: ">= 0.85",
      measured: fixed(r.fullVsFetch),
      met: known(r.fullVsFetch, r.fullVsFetch >= 0.85),
    },
    {
      goal: "Cold mirror throughput vs the limit (fetch + parse + bare write)",
      target: ">= 0.50",
      measured: fixed(r.coldVsLimit),
      met: known(r.coldVsLimit, r.coldVsLimit >= 0.5),
    },
    {
      goal: "Peak RSS of the cold mirror at the large size",
      target: "< 200 MB",
      measured: cold ? `${mb(cold.peakRssKb)} MB` : "n/a",
      met: cold ? mb(cold.peakRssKb) < 200 : undefined,
    },
    {
      goal: "Peak RSS flat from the small to the large size (large / small)",
      target: "<= 1.15",
      measured: fixed(r.rssGrowth),
      met: known(r.rssGrowth, r.rssGrowth <= 1.15),
    },
    ...postgresGoals(r, results),
    {
      goal: "Run-list calls per polling round",
      target: `<= ceil(runs / 100) = ${Number.isFinite(allowed) ? allowed : "n/a"}`,
      measured: Number.isFinite(maxList) ? `max ${maxList}` : "n/a",
      met: known(maxList, maxList <= allowed),
    },
  ];
}

/** PostgreSQL at its limit, on loopback and through the delay proxy (a database on another host). */
function postgresGoals(r: ReturnType<typeof ratios>, results: Results): Goal[] {
  const known = (n: number, ok: boolean) => (Number.isFinite(n) ? ok : undefined);
  const atLeast = (goal: string, n: number, target: number): Goal => ({
    goal,
    target: `>= ${fixed(target)}`,
    measured: fixed(n),
    met: known(n, n >= target),
  });
  const trips = Math.max(pageRoundTrips(results, "pg-away-cold"), pageRoundTrips(results, "pg-away-full"));
  return [
    atLeast(
      "PostgreSQL away, cold mirror vs its limit (bare write through the same proxy), rows/s",
      r.pgAwayColdVsLimit,
      0.8,
    ),
    atLeast("PostgreSQL away, unchanged full vs its limit, rows/s", r.pgAwayFullVsLimit, 0.8),
    atLeast("PostgreSQL on loopback, cold mirror vs its limit, rows/s", r.pgColdVsLimit, 0.85),
    atLeast("PostgreSQL on loopback, unchanged full vs its limit, rows/s", r.pgFullVsLimit, 0.85),
    {
      goal: "PostgreSQL away, cold mirror CPU per row vs SQLite's",
      target: "<= 1.30",
      measured: fixed(r.pgAwayCpuPerRowVsSqlite),
      met: known(r.pgAwayCpuPerRowVsSqlite, r.pgAwayCpuPerRowVsSqlite <= 1.3),
    },
    {
      goal: "PostgreSQL away, round trips per page transaction (counted at the proxy, the worse of cold and full)",
      target: "<= 3",
      measured: fixed(trips, 1),
      met: known(trips, trips <= 3),
    },
  ];
}

/** Facts that say what bounds each measured pass, and why a goal was missed. */
export function analysis(results: Results, options: BenchOptions): string[] {
  const all = goals(results);
  const rssGoal = all.find((g) => g.goal.startsWith("Peak RSS of"));
  const flatGoal = all.find((g) => g.goal.startsWith("Peak RSS flat"));
  const notes = [...memoryNotes(results, options, rssGoal?.met === false, flatGoal?.met === false)];
  for (const id of ["cold", "full", "limit-fetch", "limit-store"]) {
    const w = results.get(id);
    if (!w) continue;
    const wall = w.wallMs / 1000;
    const perRow = (seconds: number) => fixed((1e6 * seconds) / Math.max(1, w.rows), 0);
    notes.push(
      `${w.title} (${w.client}): the measured process was on CPU ${Math.round((100 * w.cpuSeconds) / wall)}% of its wall time, ` +
        `the simulator ${Math.round((100 * w.simCpuSeconds) / wall)}% (${perRow(w.cpuSeconds)} µs of client CPU and ` +
        `${perRow(w.simCpuSeconds)} µs of simulator CPU per row).`,
    );
  }
  return notes;
}

function memoryNotes(results: Results, options: BenchOptions, overGoal: boolean, notFlat: boolean): string[] {
  const notes: string[] = [];
  const cold = results.get("cold");
  const limit = results.get("limit-fetch");
  const capped = results.get("cold-capped");
  const cappedSmall = results.get("cold-small-capped");
  if (cold && limit && (overGoal || notFlat)) {
    const pageMB = Number(limit.notes.exportMB) / Math.max(1, Number(limit.notes.pages));
    notes.push(
      `Peak RSS: the limit client, which keeps nothing it reads, peaked at ${mb(limit.peakRssKb)} MB on the same pages with as many export requests in flight, ` +
        `against syncmirror's ${mb(cold.peakRssKb)} MB: the peak is set by how V8 handles the response JSON, not by what the mirror keeps. ` +
        `Each page is ${fixed(pageMB, 1)} MB of JSON plus its parsed objects, dead once the page commits but freed only by a later collection: ` +
        "V8's default policy lets the old generation grow to about four times its live size (about 20 MB here) before a full collection and keeps 32 MB of young generation, " +
        "and a response string still being parsed when a scavenge runs is promoted to the old generation. " +
        "On top of that, syncmirror's modules take about 20 MB more than the limit client's, and SQLite's page cache up to 4 MB.",
    );
  }
  if (notFlat) {
    notes.push(
      "Peak RSS from the small to the large export: at the small size each run is a single page and the pass ends before the heap reaches the steady state above; " +
        "from there it does not grow with the export (the pages in flight: up to 4 runs at once plus export.pages_ahead_per_pass).",
    );
  }
  if (cold && capped && cappedSmall) {
    notes.push(
      `With NODE_OPTIONS=${options.cappedNodeOptions} and MALLOC_ARENA_MAX=${CONTAINER_MALLOC_ARENA_MAX} the same cold pass peaked at ${mb(capped.peakRssKb)} MB (${mb(cappedSmall.peakRssKb)} MB at the small size, ratio ${fixed(capped.peakRssKb / cappedSmall.peakRssKb)}), ` +
        `at ${Math.round(rate(capped))} rows/s against ${Math.round(rate(cold))} uncapped, using ${fixed(capped.cpuSeconds, 1)} s of CPU against ${fixed(cold.cpuSeconds, 1)} s ` +
        "(the extra CPU is garbage collection; wall times move with the machine's load, CPU seconds much less).",
    );
  }
  return notes;
}
