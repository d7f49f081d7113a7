/** bench/RESULTS.md: machine facts, the goals, every figure and the ratios, as Markdown. */
import { analysis, fixed, goals, mb, type Results, rate, ratios } from "./figures.js";
import { CONTAINER_MALLOC_ARENA_MAX } from "./mirror.js";
import { type BenchOptions, FULL_SIZE_FLAGS } from "./options.js";
import { type PostgresReport, postgresSection } from "./postgres.js";
import { replicaSection } from "./replicas.js";
import { scaleSection } from "./scale.js";
import type { WorkloadResult } from "./workloads.js";

export interface MachineFacts {
  cpu: string;
  cores: number;
  memoryGiB: number;
  os: string;
  node: string;
  sqlite: string;
  loadStart: number[];
  loadEnd: number[];
  rssMethod: string;
  commit: string;
}

export interface Sizes {
  large: { docs: number; users: number; servers: string };
  small: { docs: number; users: number; servers: string };
  polling: { docs: number; users: number; servers: string };
  edited: number;
}

export interface Report {
  startedAt: Date;
  benchWallMs: number;
  options: BenchOptions;
  machine: MachineFacts;
  sizes: Sizes;
  results: Results;
  postgres: PostgresReport;
  /** The hand-written part of the previous RESULTS.md (see keptSection), carried over as it was. */
  kept: string | undefined;
  /** bench/RESULTS-scale.md as the last `--scale` run wrote it, quoted at the end. */
  scaleReport: string | undefined;
}

/** The order workloads appear in the tables (ids not listed come last, as run). */
const ORDER = [
  "cold",
  "cold-small",
  "cold-capped",
  "cold-small-capped",
  "warm",
  "full",
  "poll",
  "limit-fetch",
  "limit-store",
  "naive-cold",
  "naive-small",
  "naive-poll",
  "one-run",
  "one-run-seq",
  "limit-one-run",
  "many-runs",
  "many-runs-seq",
  "limit-many-runs",
  "pg-cold",
  "pg-full",
  "pg-limit-store",
  "pg-away-cold",
  "pg-away-full",
  "pg-away-limit-store",
];

type Cell = string | number;

function table(header: string[], rows: Cell[][]): string[] {
  return [
    `| ${header.join(" | ")} |`,
    `|${header.map((_, i) => (i === 0 ? "---" : "---:")).join("|")}|`,
    ...rows.map((row) => `| ${row.join(" | ")} |`),
    "",
  ];
}

export function renderReport(report: Report): string {
  const { options, results } = report;
  const list = [...results.values()].sort((a, b) => rank(a.id) - rank(b.id));
  return [
    "# syncmirror benchmark results",
    "",
    `Run ${report.startedAt.toISOString()} on commit ${report.machine.commit}, by \`npm run bench\`` +
      `${options.mirrorCli ? ` measuring the mirror build ${options.mirrorCli}` : ""}; the run took ` +
      `${fixed(report.benchWallMs / 60_000, 1)} min after the build. Every run rewrites this file: change bench/report.ts, not this file.`,
    "",
    ...(report.kept ? [report.kept, ""] : []),
    ...machineSection(report.machine),
    ...sizesSection(report),
    ...goalsSection(results, options),
    ...resultsSection(list, options),
    ...phasesSection(list),
    ...ratiosSection(results),
    ...rssSection(results, options),
    ...pollingSection(results),
    ...latencySection(results, options),
    ...postgresSection(results, report.postgres, table),
    ...replicaSection(report.postgres.replicas, report.postgres.replicasSkipped, table),
    ...routesSection(list),
    ...scaleSection(report.scaleReport),
  ].join("\n");
}

const KEPT_START = "<!-- kept: written by hand; bench/report.ts carries it over unchanged -->";
const KEPT_END = "<!-- /kept -->";

/** The hand-written part of a previous report, markers included, if it has one. */
export function keptSection(previous: string | undefined): string | undefined {
  const start = previous?.indexOf(KEPT_START) ?? -1;
  const end = previous?.indexOf(KEPT_END, start) ?? -1;
  return previous && start >= 0 && end > start ? previous.slice(start, end + KEPT_END.length) : undefined;
}

function rank(id: string): number {
  const i = ORDER.indexOf(id);
  return i < 0 ? ORDER.length : i;
}

function machineSection(machine: MachineFacts): string[] {
  const load = (l: number[]) => l.map((n) => n.toFixed(2)).join(", ");
  const out = [
    "## Machine",
    "",
    ...table(
      ["", ""],
      [
        ["CPU", `${machine.cpu} x ${machine.cores}`],
        ["Memory", `${machine.memoryGiB} GiB`],
        ["OS", machine.os],
        ["Node", machine.node],
        ["SQLite", machine.sqlite],
        ["Load average (1, 5, 15 min) at start", load(machine.loadStart)],
        ["Load average (1, 5, 15 min) at end", load(machine.loadEnd)],
        ["Peak RSS measured by", machine.rssMethod],
      ],
    ),
  ];
  if (Math.max(machine.loadStart[0] ?? 0, machine.loadEnd[0] ?? 0) > machine.cores) {
    out.push(
      `> The load average exceeded the ${machine.cores} cores during this run: other processes competed for the CPU, so wall times (and the ratios built on them) are pessimistic. CPU seconds are less affected.`,
      "",
    );
  }
  return out;
}

function sizesSection({ sizes, options }: Report): string[] {
  const describe = (s: Sizes["large"]) => `${s.docs} documents, ${s.users} users, servers ${s.servers}`;
  return [
    "## Sizes",
    "",
    `- Large (workloads 1-3 on both stores, the naive and limit references): ${describe(sizes.large)}, sized for ${options.resources} exported rows.`,
    `- Small (peak RSS at the smaller export): ${describe(sizes.small)}, sized for ${options.smallResources} exported rows.`,
    `- Polling (workload 4): ${describe(sizes.polling)}, so one run per user.`,
    `- Warm incremental: ${sizes.edited} documents edited (${options.changeFraction * 100}%) before the pass.`,
    `- "Rows" are resource rows exported across all runs (a key visible to k users arrives k times); "keys" are distinct keys. ` +
      `For 100k distinct keys (about 1.2M rows) run \`npm run bench -- --docs 100000\`; for the sizes issue 10 was measured at, \`npm run bench -- ${FULL_SIZE_FLAGS}\`.`,
    `- Mirror polling: poll_initial_seconds ${options.pollSeconds}, poll_max_seconds ${options.pollMaxSeconds}; ` +
      `the naive client sleeps ${options.pollSeconds} s between rounds; the limit client keeps 8 export requests in flight in the workloads without latency (the most the mirror's defaults allow: 4 runs at once plus \`export.pages_ahead_per_pass\` 4), and in the latency workloads as many as the simulator saw the mirror keep. Column "In flight" is the most export requests open at the simulator at once: without latency it answers each request in one go, so it shows 1 there.`,
    `- Latency (workloads 5 and 6): the simulator holds every API request ${options.latencyMs} ms before answering; each workload is sized for ${options.latencyResources} exported rows, workload 5 with one user (one run), workload 6 with ${options.users}.`,
    `- Scale-out: ${options.replicaMirrors} mirrors, each sized for ${options.replicaResources} exported rows (see its section).`,
    "",
  ];
}

function goalsSection(results: Results, options: BenchOptions): string[] {
  return [
    "## Goals",
    "",
    `Judged at this run's sizes (large ${options.resources}, small ${options.smallResources} exported rows). Issue 10 sets its RSS and ` +
      "throughput goals at 100k and 1M rows: at the default sizes the small pass is a single page per run, so the RSS ratio overstates growth " +
      "(see the hand-written section above, or run with the full-size flags under Sizes).",
    "",
    ...table(
      ["Goal", "Target", "Measured", "Met"],
      goals(results).map((g) => [
        g.goal,
        g.target,
        g.measured,
        g.met === undefined ? "n/a" : g.met ? "yes" : "**no**",
      ]),
    ),
    ...analysis(results, options).map((note) => `- ${note}`),
    "",
  ];
}

function resultsSection(list: WorkloadResult[], options: BenchOptions): string[] {
  const repeatedRows = [
    options.repeats > 1
      ? `workloads 1 and 3 and the two limits beside them ran ${Math.max(options.repeats, options.rssRepeats)}, ${options.repeats}, ${options.repeats} and ${options.repeats} times (each cold pass and limit on a fresh database, each full pass over the same mirror)`
      : "",
    options.rssRepeats > 1
      ? `the other cold passes (1s, 1c, 1sc) ${options.rssRepeats} times each, on a fresh database`
      : "",
  ].filter((part) => part !== "");
  const repeats =
    repeatedRows.length > 0
      ? ` Repeated: ${repeatedRows.join("; ")}. Their rows show the run with the median wall time, with median CPU and peak RSS (the notes give the peak RSS range).`
      : "";
  const header = ["Workload", "Client", "Wall s", "Rows", "Keys", "Rows/s", "Keys/s", "Peak RSS MB"];
  return [
    "## Results",
    "",
    "Wall time is the measured process from spawn to exit (node start, config, migrations, trigger, waiting, ingest, sweep, settle). " +
      `CPU is that process's user + system time; sim CPU is the simulator process's over the same span.${repeats}`,
    "",
    ...table(
      [...header, "CPU s", "Sim CPU s", "API requests", "In flight", "DB MB"],
      list.map((w) => [
        w.title,
        w.client,
        fixed(w.wallMs / 1000, 1),
        w.rows,
        w.uniqueKeys,
        Math.round(rate(w)),
        Math.round(rate(w, w.uniqueKeys)),
        mb(w.peakRssKb),
        fixed(w.cpuSeconds, 1),
        fixed(w.simCpuSeconds, 1),
        w.totalRequests,
        w.exportInFlight,
        w.db ? fixed(w.db.bytes / 1e6, 1) : "-",
      ]),
    ),
    ...list.filter((w) => Object.keys(w.notes).length > 0).map(noteLine),
    "",
  ];
}

function noteLine(w: WorkloadResult): string {
  const notes = Object.entries(w.notes)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");
  const db = w.db
    ? `; database rows: ${w.db.resources} resources, ${w.db.access} access${w.db.changes ? `, ${w.db.changes} changes` : ""}`
    : "";
  return `- ${w.title} (${w.client}): ${notes}${db}.`;
}

function phasesSection(list: WorkloadResult[]): string[] {
  const phased = list.filter((w) => w.phases);
  if (phased.length === 0) return [];
  const s = (ms: number) => fixed(ms / 1000);
  return [
    "### Where the mirror's wall time goes",
    "",
    "From the pass's own log lines (LOG_LEVEL=debug logs each API request).",
    "",
    ...table(
      ["Workload", "Startup s", "Waiting for runs s", "Ingest s", "Last page + sweep + settle s", "Exit s"],
      phased.map((w) => {
        const p = w.phases as NonNullable<WorkloadResult["phases"]>;
        return [w.title, s(p.startupMs), s(p.waitMs), s(p.ingestMs), s(p.tailMs), s(p.exitMs)];
      }),
    ),
  ];
}

function ratiosSection(results: Results): string[] {
  const r = ratios(results);
  return [
    "## Ratios",
    "",
    ...table(
      ["Ratio", "Value"],
      [
        ["Cold: syncmirror / limit (fetch + parse + bare write), rows/s", fixed(r.coldVsLimit)],
        ["Cold: syncmirror / fetch-and-parse limit, rows/s", fixed(r.coldVsFetch)],
        ["Unchanged full + sweep: syncmirror / fetch-and-parse limit, rows/s", fixed(r.fullVsFetch)],
        [
          "Storage limit alone (bare INSERTs, one transaction), rows/s of write time",
          Math.round(r.storageRowsPerSecond),
        ],
        ["Cold: naive / syncmirror, wall time", `${fixed(r.naiveColdWall)}x`],
        ["Cold: naive / syncmirror, rows/s", fixed(r.naiveColdRows)],
        ["Cold: naive / syncmirror, peak RSS", `${fixed(r.naiveColdRss)}x`],
      ],
    ),
  ];
}

function rssSection(results: Results, options: BenchOptions): string[] {
  const pair = (small: string, large: string, label: string): Cell[][] => {
    const s = results.get(small);
    const l = results.get(large);
    if (!s || !l) return [];
    const cell = (w: WorkloadResult) => `${w.rows} rows: ${mb(w.peakRssKb)} MB`;
    return [[label, cell(s), cell(l), fixed(l.peakRssKb / s.peakRssKb)]];
  };
  return [
    "## Peak RSS against export size",
    "",
    ...table(
      ["Client", "Small export", "Large export", "Large / small"],
      [
        ...pair("cold-small", "cold", "syncmirror (cold)"),
        ...pair(
          "cold-small-capped",
          "cold-capped",
          `syncmirror (cold), NODE_OPTIONS=${options.cappedNodeOptions}, MALLOC_ARENA_MAX=${CONTAINER_MALLOC_ARENA_MAX}`,
        ),
        ...pair("naive-small", "naive-cold", "naive (cold)"),
      ],
    ),
  ];
}

function pollingSection(results: Results): string[] {
  const p = results.get("poll")?.polling;
  if (!p) return [];
  const perRound = p.listCallsPerRound;
  const naive = results.get("naive-poll");
  const mean = perRound.reduce((a, b) => a + b, 0) / Math.max(1, perRound.length);
  const shown = perRound.slice(0, 30).join(", ");
  return [
    `## Polling: a ${p.runs}-run trigger`,
    "",
    ...table(
      [
        "Client",
        "Rounds",
        "Run-list calls per round (max / mean)",
        "Run-detail calls per round (max)",
        "API calls until done",
      ],
      [
        [
          "syncmirror",
          p.rounds,
          `${Math.max(0, ...perRound)} / ${fixed(mean, 1)}`,
          Math.max(0, ...p.detailCallsPerRound),
          p.totalCalls,
        ],
        ...(naive
          ? [
              [
                "naive",
                String(naive.notes.rounds),
                "0",
                String(naive.notes.maxCallsPerRound),
                naive.totalRequests,
              ],
            ]
          : []),
      ],
    ),
    `syncmirror's run-list calls per round, in order: ${shown}${perRound.length > 30 ? ", ..." : ""}. ` +
      "API calls until done count every request of the pass, exports included.",
    "",
  ];
}

function routesSection(list: WorkloadResult[]): string[] {
  const routes = [...new Set(list.flatMap((w) => w.requests.map((c) => c.route)))].sort();
  return [
    "## API requests by route",
    "",
    ...table(
      ["Route", ...list.map((w) => w.id)],
      routes.map((route) => [
        `\`${route}\``,
        ...list.map((w) => {
          const c = w.requests.find((x) => x.route === route);
          return c ? `${c.count}${c.failed ? ` (${c.failed} failed)` : ""}` : "";
        }),
      ]),
    ),
  ];
}

function latencySection(results: Results, options: BenchOptions): string[] {
  const r = ratios(results);
  const rows: Cell[][] = [];
  for (const [id, label, vsLimit, vsSeq] of [
    ["one-run", "5. One large run", r.oneRunVsLimit, r.oneRunVsSequential],
    ["many-runs", "6. Many runs", r.manyRunsVsLimit, r.manyRunsVsSequential],
  ] as const) {
    const piped = results.get(id);
    const seq = results.get(`${id}-seq`);
    const limit = results.get(`limit-${id}`);
    if (!piped || !seq || !limit) continue;
    rows.push([
      `${label}, ${options.latencyMs} ms latency`,
      Math.round(rate(seq)),
      Math.round(rate(piped)),
      Math.round(rate(limit)),
      piped.exportInFlight,
      fixed(vsSeq, 1),
      fixed(vsLimit),
    ]);
  }
  if (rows.length === 0) return [];
  return [
    "## Remote latency: pipelined paging",
    "",
    "Rows/s of the whole pass (wall time from spawn to exit). One page at a time is the mirror with `export.pages_ahead_per_run: 0` " +
      "(the paging before pipelining); the limit client fetches and parses the same pages with the same number of export requests in flight as the simulator saw the pipelined mirror keep.",
    "",
    ...table(
      [
        "Workload",
        "One page at a time, rows/s",
        "Pipelined, rows/s",
        "Limit, rows/s",
        "Requests in flight",
        "Pipelined / one at a time",
        "Pipelined / limit",
      ],
      rows,
    ),
  ];
}
