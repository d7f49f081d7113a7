/**
 * `node dist-bench/bench/pg-network.js`: the PostgreSQL goals of issue 23 alone, quicker than the
 * whole `npm run bench` and with A/B builds interleaved. Each round runs, for each build, a cold
 * full mirror and an unchanged full snapshot on a fresh database through the delay proxy and on
 * loopback, and a cold SQLite pass (for CPU per row); then the limit client through the proxy and
 * on loopback. Medians over the rounds are printed with the round trips each pass took per export
 * page, counted at the proxy. Sizes: `--resources`, `--users`, `--rounds`, `--pg-delay-ms`;
 * `--mirror-cli` names a second build (a baseline) measured in the same rounds; `--cpu-prof DIR`
 * writes each mirror and limit-client process's CPU profile there. `--search 1`
 * measures instead the cold pass on loopback with `search.enabled` off and on, in turn.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { startDelayProxy } from "./delay-proxy.js";
import { docsForRows } from "./options.js";
import { adminUrl, localServerCpuSeconds, withDatabase } from "./pg-server.js";
import { withSimProcess } from "./sim-process.js";
import { type BenchContext, createDb, limitPass, mirrorPass, type WorkloadResult } from "./workloads.js";

const BENCH_DIR = import.meta.dirname;
const CLI = resolve(BENCH_DIR, "..", "..", "dist", "cli.js");
const EXPORT_ROUTE = "GET /sync-task/{sync_id}/export";

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      resources: { type: "string", default: "10000" },
      users: { type: "string", default: "10" },
      rounds: { type: "string", default: "3" },
      "pg-delay-ms": { type: "string", default: "1" },
      "mirror-cli": { type: "string" },
      search: { type: "string", default: "0" },
      "cpu-prof": { type: "string" },
    },
  });
  const users = Number(values.users);
  const delayMs = Number(values["pg-delay-ms"]);
  const builds: [string, string][] = [["this", CLI]];
  if (values["mirror-cli"]) builds.push(["other", resolve(values["mirror-cli"])]);
  const dir = mkdtempSync(join(tmpdir(), "syncmirror-pg-network-"));
  const started = performance.now();
  const ctx: BenchContext = {
    cli: CLI,
    mirrorCli: CLI,
    benchDir: BENCH_DIR,
    dir,
    pollSeconds: 0.5,
    pollMaxSeconds: 2,
    cpuProfDir: values["cpu-prof"] ? resolve(values["cpu-prof"]) : undefined,
    log: (text) =>
      process.stderr.write(`[pg-network ${((performance.now() - started) / 1000).toFixed(0)}s] ${text}\n`),
  };
  const all = new Map<string, WorkloadResult[]>();
  const add = (key: string, r: WorkloadResult) => all.set(key, [...(all.get(key) ?? []), r]);
  const admin = adminUrl();
  const docs = docsForRows(Number(values.resources), users);
  try {
    await withSimProcess(
      { cli: CLI, seed: 1, users, docs, servers: "notion=1,github=1" },
      ctx.log,
      async (sim) => {
        for (let round = 1; round <= Number(values.rounds); round++) {
          if (values.search === "1") {
            for (const [build, cli] of builds) {
              for (const search of [false, true]) {
                const bctx = { ...ctx, mirrorCli: cli };
                const id = `${build}-loopback-cold-search-${search ? "on" : "off"}`;
                await withDatabase(admin, `net-${id}`, async (url) => {
                  const { setup, db } = createDb(bctx, sim, `${id}-${round}`, undefined, url);
                  const config = JSON.parse(readFileSync(db.configPath, "utf8")) as Record<string, unknown>;
                  writeFileSync(db.configPath, JSON.stringify({ ...config, search: { enabled: search } }));
                  add(id, await mirrorPass(bctx, sim, setup, db, { id, title: id, full: false }));
                });
              }
            }
            continue;
          }
          for (const [build, cli] of builds) {
            const bctx = { ...ctx, mirrorCli: cli };
            for (const away of delayMs > 0 ? [true, false] : [false]) {
              const where = away ? "away" : "loopback";
              await withDatabase(admin, `net-${build}-${where}`, (url) =>
                reach(url, away ? delayMs : 0, async (dbUrl, counts) => {
                  const { setup, db } = createDb(bctx, sim, `${build}-${where}-${round}`, undefined, dbUrl);
                  for (const full of [false, true]) {
                    const before = counts();
                    const id = `${build}-${where}-${full ? "full" : "cold"}`;
                    const r = await mirrorPass(bctx, sim, setup, db, { id, title: id, full });
                    add(id, withRoundTrips(r, before, counts()));
                  }
                }),
              );
            }
            const { setup, db } = createDb(bctx, sim, `${build}-sqlite-${round}`);
            add(
              `${build}-sqlite-cold`,
              await mirrorPass(bctx, sim, setup, db, { id: "sqlite", title: "sqlite", full: false }),
            );
          }
          for (const away of delayMs > 0 ? [true, false] : [false]) {
            const where = away ? "away" : "loopback";
            await withDatabase(admin, `net-limit-${where}`, (url) =>
              reach(url, away ? delayMs : 0, async (dbUrl, counts) => {
                const before = counts();
                const id = `limit-${where}`;
                const r = await limitPass(ctx, sim, {
                  id,
                  title: id,
                  mode: "pg-store",
                  inFlight: 8,
                  databaseUrl: dbUrl,
                });
                add(id, withRoundTrips(r, before, counts()));
              }),
            );
          }
        }
      },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  printSummary(
    all,
    builds.map(([b]) => b),
  );
}

/** `fn` on the database through the delay proxy, or straight on loopback (no round trips counted). */
async function reach(
  url: string,
  delayMs: number,
  fn: (url: string, counts: () => Counts) => Promise<void>,
): Promise<void> {
  if (delayMs === 0)
    return fn(url, () => ({
      roundTrips: Number.NaN,
      pages: Number.NaN,
      pageRoundTrips: Number.NaN,
      dbCpuSeconds: localServerCpuSeconds(),
    }));
  const proxy = await startDelayProxy(url, delayMs);
  try {
    await fn(proxy.url, () => {
      const pages = proxy.pages();
      return {
        roundTrips: proxy.roundTrips(),
        pages: pages.pages,
        pageRoundTrips: pages.roundTrips,
        dbCpuSeconds: localServerCpuSeconds(),
      };
    });
  } finally {
    await proxy.close();
  }
}

interface Counts {
  roundTrips: number;
  pages: number;
  pageRoundTrips: number;
  /** The local PostgreSQL server's CPU so far (`localServerCpuSeconds`). */
  dbCpuSeconds: number;
}

function withRoundTrips(r: WorkloadResult, before: Counts, after: Counts): WorkloadResult {
  const exportPages = r.requests.find((q) => q.route === EXPORT_ROUTE)?.count ?? 0;
  return {
    ...r,
    notes: {
      ...r.notes,
      roundTrips: after.roundTrips - before.roundTrips,
      exportPages,
      pageTransactions: after.pages - before.pages,
      pageRoundTrips: after.pageRoundTrips - before.pageRoundTrips,
      dbCpuSeconds: after.dbCpuSeconds - before.dbCpuSeconds,
    },
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0
    ? Number.NaN
    : ((s[(s.length - 1) >> 1] as number) + (s[s.length >> 1] as number)) / 2;
};

function printSummary(all: Map<string, WorkloadResult[]>, builds: string[]): void {
  const rate = (r: WorkloadResult) => r.rows / (r.wallMs / 1000);
  const cpuPerRow = (r: WorkloadResult) => (r.cpuSeconds / r.rows) * 1e6;
  const med = (key: string, f: (r: WorkloadResult) => number) => median((all.get(key) ?? []).map(f));
  const lines = [
    "| Pass | Rows/s (median) | CPU µs/row | Database server CPU µs/row | Round trips | Export pages | Round trips / export page | Page transactions | Round trips / page transaction | per round: rows/s |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
  ];
  for (const [key, rs] of all) {
    const note = (name: string) => (r: WorkloadResult) => Number(r.notes[name] ?? Number.NaN);
    const rt = med(key, note("roundTrips"));
    const pages = med(key, note("exportPages"));
    const tx = med(key, note("pageTransactions"));
    const txRt = med(key, note("pageRoundTrips"));
    lines.push(
      `| ${key} | ${med(key, rate).toFixed(0)} | ${med(key, cpuPerRow).toFixed(0)} | ${med(key, (r) => (note("dbCpuSeconds")(r) / r.rows) * 1e6).toFixed(0)} | ${rt} | ${pages} | ${(rt / pages).toFixed(1)} | ${tx} | ${(txRt / tx).toFixed(2)} | ${rs.map((r) => rate(r).toFixed(0)).join(", ")} |`,
    );
  }
  lines.push(
    "",
    "| Pass | Startup s | Waiting for runs s | Ingest s | Last page + sweep + settle s | Exit s |",
    "|---|---:|---:|---:|---:|---:|",
  );
  for (const [key] of all) {
    const phase = (name: "startupMs" | "waitMs" | "ingestMs" | "tailMs" | "exitMs") =>
      (med(key, (r) => r.phases?.[name] ?? Number.NaN) / 1000).toFixed(2);
    lines.push(
      `| ${key} | ${phase("startupMs")} | ${phase("waitMs")} | ${phase("ingestMs")} | ${phase("tailMs")} | ${phase("exitMs")} |`,
    );
  }
  lines.push("", "| Build | Ratio | Value |", "|---|---|---:|");
  for (const b of builds) {
    for (const where of ["away", "loopback"]) {
      for (const pass of ["cold", "full"]) {
        // Per round, each pass against the same round's limit, then the median.
        const mine = all.get(`${b}-${where}-${pass}`) ?? [];
        const limit = all.get(`limit-${where}`) ?? [];
        const ratios = mine.map((r, i) => rate(r) / rate(limit[i] ?? r));
        lines.push(
          `| ${b} | ${pass} ${where} / limit ${where}, rows/s | ${median(ratios).toFixed(2)} (${ratios.map((x) => x.toFixed(2)).join(", ")}) |`,
        );
      }
      const cold = all.get(`${b}-${where}-cold`) ?? [];
      const sqlite = all.get(`${b}-sqlite-cold`) ?? [];
      const cpu = cold.map((r, i) => cpuPerRow(r) / cpuPerRow(sqlite[i] ?? r));
      lines.push(
        `| ${b} | cold ${where} CPU per row / SQLite cold | ${median(cpu).toFixed(2)} (${cpu.map((x) => x.toFixed(2)).join(", ")}) |`,
      );
    }
  }
  process.stdout.write(`${lines.join("\n")}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(
    `pg-network failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
