/**
 * Benchmark sizes and knobs: `--name value` flags win over `BENCH_*` environment variables, which
 * win over the defaults. `npm run bench -- --resources 20000` or `BENCH_RESOURCES=20000 npm run bench`.
 * The defaults keep the whole run under 10 minutes on two loaded cores; FULL_SIZE_FLAGS are the
 * sizes issue 10's figures were measured at.
 */
import { parseArgs } from "node:util";

export interface BenchOptions {
  /** Exported resource rows of the large workloads (a key visible to k users counts k times). */
  resources: number;
  /** Exported resource rows of the small run that the peak-RSS comparison uses. */
  smallResources: number;
  /** Unique documents of the large workloads; derived from `resources` unless given. */
  docs: number | undefined;
  users: number;
  /** Servers per source type, as `syncmirror simulate --servers` takes them. */
  servers: string;
  seed: number;
  /** Share of documents edited before the warm incremental pass. */
  changeFraction: number;
  /** Runs of the polling workload (one user per run, one server). */
  pollRuns: number;
  /** Documents of the polling workload (kept small: it measures API calls, not ingest). */
  pollDocs: number;
  /** The mirror's poll_initial_seconds, and the naive client's fixed sleep. */
  pollSeconds: number;
  pollMaxSeconds: number;
  /** Server-side latency of the latency workloads (5, 6), in ms. */
  latencyMs: number;
  /** Exported rows of each latency workload. */
  latencyResources: number;
  /** `--scale`: run the scale workloads (bench/scale.ts) instead of the default set. */
  scale: boolean;
  /** Exported rows of the scale run's two sizes. */
  scaleResources: number[];
  /** Cold passes at the scale run's smallest size, the base of its peak-RSS growth (their median counts). */
  scaleSmallRepeats: number;
  /** Run the naive reference client (it is the slowest part). */
  naive: boolean;
  /** Where the report goes. */
  out: string;
  /** Keep the work directory (databases, logs) instead of deleting it. */
  keep: boolean;
  /** Write a V8 CPU profile of every measured mirror pass into this directory. */
  cpuProfDir: string | undefined;
  /**
   * The container's NODE_OPTIONS (the Dockerfile's): one more cold pass at each size with them, to
   * show what the capped V8 heap does to peak RSS and throughput (empty: skip those passes); the
   * scale run uses them for every pass.
   */
  cappedNodeOptions: string;
  /** Cold passes behind the peak-RSS comparison are run this many times; medians are reported. */
  rssRepeats: number;
  /**
   * The passes the CPU and throughput goals compare (the large cold pass, the unchanged full, and
   * both limits) run this many times and their medians count: on a loaded machine one pass's wall
   * time or CPU moves by a tenth or more from run to run.
   */
  repeats: number;
  /** Synthetic resources of the search bench (bench/search.ts, run last); 0 skips it. */
  searchResources: number;
  /** Documents of its end-to-end cold sync (3 users). */
  searchE2eDocs: number;
  /** Run the PostgreSQL workloads (skipped anyway when no server answers, see pg-server.ts). */
  postgres: boolean;
  /** Mirrors (sync configs) of the scale-out workload; 0 skips it. */
  replicaMirrors: number;
  /** One-way delay of the proxy between the mirror and PostgreSQL in the "away" workloads; 0 skips them. */
  pgDelayMs: number;
  /** Exported rows of each of those mirrors. */
  replicaResources: number;
  /** Another build's `cli.js` to measure as the mirror (A/B against dist/cli.js); the simulator stays dist's. */
  mirrorCli: string | undefined;
}

const SPEC = {
  resources: { env: "BENCH_RESOURCES", fallback: "20000" },
  "small-resources": { env: "BENCH_SMALL_RESOURCES", fallback: "2000" },
  docs: { env: "BENCH_DOCS", fallback: "" },
  users: { env: "BENCH_USERS", fallback: "20" },
  servers: { env: "BENCH_SERVERS", fallback: "notion=1,github=1" },
  seed: { env: "BENCH_SEED", fallback: "1" },
  "change-fraction": { env: "BENCH_CHANGE_FRACTION", fallback: "0.01" },
  "poll-runs": { env: "BENCH_POLL_RUNS", fallback: "500" },
  "poll-docs": { env: "BENCH_POLL_DOCS", fallback: "50" },
  "poll-seconds": { env: "BENCH_POLL_SECONDS", fallback: "0.5" },
  "poll-max-seconds": { env: "BENCH_POLL_MAX_SECONDS", fallback: "2" },
  "latency-ms": { env: "BENCH_LATENCY_MS", fallback: "100" },
  "latency-resources": { env: "BENCH_LATENCY_RESOURCES", fallback: "20000" },
  scale: { env: "BENCH_SCALE", fallback: "0" },
  "scale-resources": { env: "BENCH_SCALE_RESOURCES", fallback: "10000,100000,1000000" },
  "scale-small-repeats": { env: "BENCH_SCALE_SMALL_REPEATS", fallback: "5" },
  naive: { env: "BENCH_NAIVE", fallback: "0" },
  out: { env: "BENCH_OUT", fallback: "bench/RESULTS.md" },
  keep: { env: "BENCH_KEEP", fallback: "0" },
  "cpu-prof": { env: "BENCH_CPU_PROF", fallback: "" },
  "capped-node-options": {
    env: "BENCH_CAPPED_NODE_OPTIONS",
    fallback: "--max-old-space-size=96 --max-semi-space-size=4",
  },
  "rss-repeats": { env: "BENCH_RSS_REPEATS", fallback: "1" },
  repeats: { env: "BENCH_REPEATS", fallback: "3" },
  "mirror-cli": { env: "BENCH_MIRROR_CLI", fallback: "" },
  "search-resources": { env: "BENCH_SEARCH_RESOURCES", fallback: "10000" },
  "search-e2e-docs": { env: "BENCH_SEARCH_E2E_DOCS", fallback: "2000" },
  postgres: { env: "BENCH_POSTGRES", fallback: "1" },
  "replica-mirrors": { env: "BENCH_REPLICA_MIRRORS", fallback: "6" },
  "pg-delay-ms": { env: "BENCH_PG_DELAY_MS", fallback: "1" },
  "replica-resources": { env: "BENCH_REPLICA_RESOURCES", fallback: "5000" },
} as const;

type Name = keyof typeof SPEC;

export const FULL_SIZE_FLAGS =
  "--resources 100000 --small-resources 10000 --latency-resources 50000 --rss-repeats 3 --naive 1 --search-resources 100000 --search-e2e-docs 20000";

export function readBenchOptions(argv: string[], env: NodeJS.ProcessEnv): BenchOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...Object.fromEntries(Object.keys(SPEC).map((name) => [name, { type: "string" as const }])),
      // `npm run bench -- --scale` is a switch.
      scale: { type: "boolean" as const },
    },
    strict: true,
    allowPositionals: false,
  });
  const raw = (name: Name): string => {
    const flag = (values as Record<string, string | boolean | undefined>)[name];
    if (typeof flag === "string") return flag;
    if (flag === true) return "1";
    return env[SPEC[name].env] ?? SPEC[name].fallback;
  };
  const num = (name: Name, min: number, max: number, integer = true): number => {
    const text = raw(name);
    const value = Number(text);
    if (
      text.trim() === "" ||
      Number.isNaN(value) ||
      value < min ||
      value > max ||
      (integer && !Number.isInteger(value))
    ) {
      throw new Error(`--${name} / ${SPEC[name].env} must be a number from ${min} to ${max}, got "${text}"`);
    }
    return value;
  };
  const flag = (name: Name): boolean => !["0", "false", "no", ""].includes(raw(name).toLowerCase());
  const users = num("users", 1, 500);
  return {
    resources: num("resources", 100, 50_000_000),
    smallResources: num("small-resources", 100, 50_000_000),
    docs: raw("docs") === "" ? undefined : num("docs", 1, 10_000_000),
    users,
    servers: raw("servers"),
    seed: num("seed", 0, 2 ** 32 - 1),
    changeFraction: num("change-fraction", 0, 1, false),
    pollRuns: num("poll-runs", 1, 500),
    pollDocs: num("poll-docs", 1, 1_000_000),
    pollSeconds: num("poll-seconds", 0.01, 60, false),
    pollMaxSeconds: num("poll-max-seconds", 0.01, 600, false),
    latencyMs: num("latency-ms", 0, 10_000),
    latencyResources: num("latency-resources", 100, 50_000_000),
    scale: flag("scale"),
    scaleResources: raw("scale-resources")
      .split(",")
      .map((n) => Number(n))
      .filter((n) => Number.isInteger(n) && n >= 100),
    scaleSmallRepeats: num("scale-small-repeats", 1, 9),
    naive: flag("naive"),
    out: raw("out"),
    keep: flag("keep"),
    cpuProfDir: raw("cpu-prof") === "" ? undefined : raw("cpu-prof"),
    cappedNodeOptions: raw("capped-node-options").trim(),
    rssRepeats: num("rss-repeats", 1, 9),
    repeats: num("repeats", 1, 9),
    mirrorCli: raw("mirror-cli") === "" ? undefined : raw("mirror-cli"),
    searchResources: num("search-resources", 0, 10_000_000),
    searchE2eDocs: num("search-e2e-docs", 1, 10_000_000),
    postgres: flag("postgres"),
    replicaMirrors: num("replica-mirrors", 0, 50),
    pgDelayMs: num("pg-delay-ms", 0, 1000),
    replicaResources: num("replica-resources", 100, 50_000_000),
  };
}

/**
 * Documents that export about `rows` resource rows. The simulator shows each document to each
 * user with probability 0.6, and to one random user when that leaves nobody, so a document is
 * exported `0.6 * users + 0.4 ** users` times on average. The measured rows are what the report shows.
 */
export function docsForRows(rows: number, users: number): number {
  return Math.max(1, Math.round(rows / (0.6 * users + 0.4 ** users)));
}

/** Total servers in a `notion=1,github=1` list. */
export function serverCount(servers: string): number {
  return servers.split(",").reduce((sum, part) => sum + Number(part.split("=")[1] ?? 0), 0);
}
