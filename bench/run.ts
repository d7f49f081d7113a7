/**
 * `npm run bench`: measures the mirror end to end against the simulator on loopback and writes a
 * dated report to bench/RESULTS.md (and prints it). Benchmarks are not tests: nothing here asserts.
 *
 * Every measured client is its own process, and the simulator another, so each peak RSS is the
 * client's alone. Workloads: 1 cold full mirror, 2 warm incremental after editing 1% of the
 * documents, 3 a full snapshot with nothing changed (hash-skipped) and its sweep, 4 a 500-run
 * trigger's polling; plus the naive and limit references on the large size and a small cold
 * mirror for the peak-RSS comparison. Sizes: see options.ts.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { latencyWorkloads } from "./latency.js";
import { machineFacts } from "./machine.js";
import { type BenchOptions, docsForRows, readBenchOptions, serverCount } from "./options.js";
import { adminUrl } from "./pg-server.js";
import { postgresPasses, postgresReplicas, probePostgres } from "./postgres.js";
import { keptSection, renderReport } from "./report.js";
import { runScale, SCALE_OUT } from "./scale.js";
import { type SimProcess, withSimProcess } from "./sim-process.js";
import {
  type BenchContext,
  createDb,
  type LimitMode,
  limitPass,
  mirrorPass,
  naivePass,
  repeated,
  round,
  type WorkloadResult,
} from "./workloads.js";

const BENCH_DIR = import.meta.dirname;
const ROOT = resolve(BENCH_DIR, "..", "..");
const CLI = join(ROOT, "dist", "cli.js");
/** The mirror's 4 runs exported at once, each with its next page, plus export.pages_ahead_per_pass (4). */
const MIRROR_MAX_EXPORTS_IN_FLIGHT = 8;

async function main(): Promise<void> {
  const options = readBenchOptions(process.argv.slice(2), process.env);
  const startedAt = new Date();
  const started = performance.now();
  const loadStart = loadavg();
  const dir = mkdtempSync(join(tmpdir(), "syncmirror-bench-"));
  if (options.cpuProfDir) mkdirSync(options.cpuProfDir, { recursive: true });
  const ctx: BenchContext = {
    cli: CLI,
    mirrorCli: options.mirrorCli ? resolve(options.mirrorCli) : CLI,
    benchDir: BENCH_DIR,
    dir,
    pollSeconds: options.pollSeconds,
    pollMaxSeconds: options.pollMaxSeconds,
    cpuProfDir: options.cpuProfDir ? resolve(options.cpuProfDir) : undefined,
    log: (text) =>
      process.stderr.write(`[bench ${((performance.now() - started) / 1000).toFixed(0)}s] ${text}\n`),
  };
  const results = new Map<string, WorkloadResult>();
  const add = (r: WorkloadResult) => results.set(r.id, r);
  const largeDocs = options.docs ?? docsForRows(options.resources, options.users);
  const smallDocs = docsForRows(options.smallResources, options.users);
  const pairs = options.users * serverCount(options.servers);
  if (pairs > 500) throw new Error(`users x servers = ${pairs}: a trigger allows at most 500 pairs`);
  let edited = 0;
  if (options.scale) {
    try {
      await runScale(ctx, options, { out: resolve(ROOT, SCALE_OUT), root: ROOT, startedAt, loadStart });
    } finally {
      if (options.keep) ctx.log(`kept ${dir}`);
      else rmSync(dir, { recursive: true, force: true });
    }
    return;
  }
  const pgAdmin = adminUrl();
  const postgres = await probePostgres(options, pgAdmin, ctx.log);
  try {
    ctx.log(`large: ${largeDocs} docs; small: ${smallDocs} docs; work dir ${dir}`);
    await withSim(ctx, { ...options, docs: largeDocs }, async (sim) => {
      const main = createDb(ctx, sim, "mirror");
      const cold = (id: string, title: string, nodeOptions?: string, times = options.rssRepeats) =>
        repeated(times, (attempt) => {
          const { setup, db } = attempt === 1 && !nodeOptions ? main : createDb(ctx, sim, `${id}-${attempt}`);
          return mirrorPass(ctx, sim, setup, db, { id, title, full: false, nodeOptions });
        });
      add(
        await cold("cold", "1. Cold full mirror", undefined, Math.max(options.rssRepeats, options.repeats)),
      );
      edited = (await sim.editRandom(options.changeFraction, options.seed)).edited;
      add(
        await mirrorPass(ctx, sim, main.setup, main.db, {
          id: "warm",
          title: `2. Warm incremental, ${options.changeFraction * 100}% changed`,
          full: false,
        }),
      );
      // The warm pass read the edits: every full pass after it finds nothing changed.
      add(
        await repeated(options.repeats, () =>
          mirrorPass(ctx, sim, main.setup, main.db, {
            id: "full",
            title: "3. Full snapshot, nothing changed, + sweep",
            full: true,
          }),
        ),
      );
      // Without latency the simulator answers one request at a time, so it never sees requests
      // queue up: the limit gets the most the mirror's default settings may keep in flight.
      const inFlight = MIRROR_MAX_EXPORTS_IN_FLIGHT;
      const limit = (id: string, title: string, mode: LimitMode) =>
        repeated(options.repeats, (attempt) =>
          limitPass(ctx, sim, { id, title, mode, inFlight, dbName: `${id}-${attempt}` }),
        );
      add(await limit("limit-fetch", "Limit: fetch + parse", "fetch"));
      add(await limit("limit-store", "Limit: fetch + parse + bare write", "store"));
      if (!postgres.skipped) await postgresPasses(ctx, sim, pgAdmin, inFlight, options.pgDelayMs, add);
      if (options.naive) {
        add(await naivePass(ctx, sim, { id: "naive-cold", title: "Naive: cold full mirror" }));
      }
      if (options.cappedNodeOptions) {
        add(await cold("cold-capped", "1c. Cold full mirror, heap capped", options.cappedNodeOptions));
      }
    });
    await withSim(ctx, { ...options, docs: smallDocs }, async (sim) => {
      const cold = (id: string, title: string, nodeOptions?: string) =>
        repeated(options.rssRepeats, (attempt) => {
          const { setup, db } = createDb(ctx, sim, `${id}-${attempt}`);
          return mirrorPass(ctx, sim, setup, db, { id, title, full: false, nodeOptions });
        });
      add(await cold("cold-small", "1s. Cold full mirror, small"));
      if (options.naive) add(await naivePass(ctx, sim, { id: "naive-small", title: "Naive: cold, small" }));
      if (options.cappedNodeOptions) {
        add(
          await cold(
            "cold-small-capped",
            "1sc. Cold full mirror, small, heap capped",
            options.cappedNodeOptions,
          ),
        );
      }
    });
    const pollSim = { ...options, users: options.pollRuns, docs: options.pollDocs, servers: "notion=1" };
    await withSim(ctx, pollSim, async (sim) => {
      const { setup, db } = createDb(ctx, sim, "mirror-poll");
      add(
        await mirrorPass(ctx, sim, setup, db, {
          id: "poll",
          title: `4. ${options.pollRuns}-run trigger`,
          full: false,
          pollingRuns: options.pollRuns,
        }),
      );
      if (options.naive) {
        add(
          await naivePass(ctx, sim, {
            id: "naive-poll",
            title: `Naive: ${options.pollRuns}-run trigger`,
            pollingRuns: options.pollRuns,
          }),
        );
      }
    });
    await latencyWorkloads(ctx, options, add);
    await postgresReplicas(ctx, options, pgAdmin, postgres);
  } finally {
    if (options.keep) ctx.log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
  const markdown = renderReport({
    startedAt,
    benchWallMs: performance.now() - started,
    options,
    machine: machineFacts(loadStart, ROOT),
    sizes: {
      large: { docs: largeDocs, users: options.users, servers: options.servers },
      small: { docs: smallDocs, users: options.users, servers: options.servers },
      polling: { docs: options.pollDocs, users: options.pollRuns, servers: "notion=1" },
      edited,
    },
    results,
    postgres,
    kept: keptSection(readIfExists(resolve(ROOT, options.out))),
    scaleReport: readIfExists(resolve(ROOT, SCALE_OUT)),
  });
  const out = resolve(ROOT, options.out);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, markdown);
  process.stdout.write(`${markdown}\n`);
  ctx.log(`wrote ${out} in ${round((performance.now() - started) / 1000)} s`);
  if (options.searchResources > 0) {
    const sizes = [
      "--resources",
      String(options.searchResources),
      "--e2e-docs",
      String(options.searchE2eDocs),
    ];
    spawnSync(process.execPath, [join(BENCH_DIR, "search.js"), ...sizes], { stdio: "inherit" });
  }
}

function withSim(
  ctx: BenchContext,
  o: Pick<BenchOptions, "seed" | "users" | "servers"> & { docs: number },
  fn: (sim: SimProcess) => Promise<void>,
): Promise<void> {
  return withSimProcess(
    { cli: ctx.cli, seed: o.seed, users: o.users, docs: o.docs, servers: o.servers },
    ctx.log,
    fn,
  );
}

function readIfExists(path: string): string | undefined {
  return existsSync(path) ? readFileSync(path, "utf8") : undefined;
}

main().catch((error: unknown) => {
  process.stderr.write(
    `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
