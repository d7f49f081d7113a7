/**
 * Benchmark sizes and knobs: `--name value` flags win over `BENCH_*` environment variables, which
 * win over the defaults. `npm run bench -- --resources 20000` or `BENCH_RESOURCES=20000 npm run bench`.
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
  /** Exports the limit client reads at once: the mirror's ingest concurrency. */
  limitConcurrency: number;
  /** Run the naive reference client (it is the slowest part). */
  naive: boolean;
  /** Where the report goes. */
  out: string;
  /** Keep the work directory (databases, logs) instead of deleting it. */
  keep: boolean;
  /** Write a V8 CPU profile of every measured mirror pass into this directory. */
  cpuProfDir: string | undefined;
  /**
   * NODE_OPTIONS for one more cold pass at each size, to show what a capped V8 heap does to peak
   * RSS and throughput (empty: skip those passes).
   */
  cappedNodeOptions: string;
  /** Cold passes behind the peak-RSS comparison are run this many times; medians are reported. */
  rssRepeats: number;
  /** Another build's `cli.js` to measure as the mirror (A/B against dist/cli.js); the simulator stays dist's. */
  mirrorCli: string | undefined;
}

const SPEC = {
  resources: { env: "BENCH_RESOURCES", fallback: "100000" },
  "small-resources": { env: "BENCH_SMALL_RESOURCES", fallback: "10000" },
  docs: { env: "BENCH_DOCS", fallback: "" },
  users: { env: "BENCH_USERS", fallback: "20" },
  servers: { env: "BENCH_SERVERS", fallback: "notion=1,github=1" },
  seed: { env: "BENCH_SEED", fallback: "1" },
  "change-fraction": { env: "BENCH_CHANGE_FRACTION", fallback: "0.01" },
  "poll-runs": { env: "BENCH_POLL_RUNS", fallback: "500" },
  "poll-docs": { env: "BENCH_POLL_DOCS", fallback: "50" },
  "poll-seconds": { env: "BENCH_POLL_SECONDS", fallback: "0.5" },
  "poll-max-seconds": { env: "BENCH_POLL_MAX_SECONDS", fallback: "2" },
  "limit-concurrency": { env: "BENCH_LIMIT_CONCURRENCY", fallback: "4" },
  naive: { env: "BENCH_NAIVE", fallback: "1" },
  out: { env: "BENCH_OUT", fallback: "bench/RESULTS.md" },
  keep: { env: "BENCH_KEEP", fallback: "0" },
  "cpu-prof": { env: "BENCH_CPU_PROF", fallback: "" },
  "capped-node-options": { env: "BENCH_CAPPED_NODE_OPTIONS", fallback: "--max-old-space-size=96" },
  "rss-repeats": { env: "BENCH_RSS_REPEATS", fallback: "3" },
  "mirror-cli": { env: "BENCH_MIRROR_CLI", fallback: "" },
} as const;

type Name = keyof typeof SPEC;

export function readBenchOptions(argv: string[], env: NodeJS.ProcessEnv): BenchOptions {
  const { values } = parseArgs({
    args: argv,
    options: Object.fromEntries(Object.keys(SPEC).map((name) => [name, { type: "string" as const }])),
    strict: true,
    allowPositionals: false,
  });
  const raw = (name: Name): string => {
    const flag = values[name];
    if (typeof flag === "string") return flag;
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
    limitConcurrency: num("limit-concurrency", 1, 64),
    naive: flag("naive"),
    out: raw("out"),
    keep: flag("keep"),
    cpuProfDir: raw("cpu-prof") === "" ? undefined : raw("cpu-prof"),
    cappedNodeOptions: raw("capped-node-options").trim(),
    rssRepeats: num("rss-repeats", 1, 9),
    mirrorCli: raw("mirror-cli") === "" ? undefined : raw("mirror-cli"),
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
