/**
 * `npm run bench -- --scale`: the mirror at three export sizes (10k, 100k and 1M exported rows by
 * default): a cold pass, a warm incremental after 1% of the documents changed, an unchanged full
 * snapshot (a sweep with nothing to revoke), and a full snapshot after 5% of the documents were
 * removed (a sweep that revokes them), each with the container's NODE_OPTIONS (`--capped-node-options`).
 * Writes bench/RESULTS-scale.md, which bench/RESULTS.md quotes.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fixed, mb, rate } from "./figures.js";
import { machineFacts } from "./machine.js";
import { CONTAINER_MALLOC_ARENA_MAX } from "./mirror.js";
import { type BenchOptions, docsForRows } from "./options.js";
import { withSimProcess } from "./sim-process.js";
import { type BenchContext, createDb, mirrorPass, repeated, type WorkloadResult } from "./workloads.js";

export const SCALE_OUT = "bench/RESULTS-scale.md";

const STEPS = [
  { id: "cold", title: "Cold full mirror" },
  { id: "warm", title: "Warm incremental, 1% changed" },
  { id: "full", title: "Full snapshot, nothing changed (sweep revokes nothing)" },
  { id: "full-5", title: "Full snapshot after 5% of documents removed (sweep revokes them)" },
] as const;

type Step = (typeof STEPS)[number]["id"];
type SizeResults = Map<Step, WorkloadResult>;

export async function runScale(
  ctx: BenchContext,
  options: BenchOptions,
  run: { out: string; root: string; startedAt: Date; loadStart: number[] },
): Promise<void> {
  const bySize = new Map<number, SizeResults>();
  const started = performance.now();
  for (const [i, rows] of options.scaleResources.entries()) {
    const results: SizeResults = new Map();
    bySize.set(rows, results);
    // The smallest size is only the base of the peak-RSS growth: a cold pass.
    const coldOnly = i === 0 && options.scaleResources.length > 2;
    const docs = docsForRows(rows, options.users);
    const simArgs = {
      cli: ctx.cli,
      seed: options.seed,
      users: options.users,
      docs,
      servers: options.servers,
    };
    await withSimProcess(simArgs, ctx.log, async (sim) => {
      const main = createDb(ctx, sim, `scale-${rows}`);
      const pass = (step: Step, full: boolean, { setup, db } = main) =>
        mirrorPass(ctx, sim, setup, db, {
          id: `${step}-${rows}`,
          title: STEPS.find((s) => s.id === step)?.title ?? step,
          full,
          nodeOptions: options.cappedNodeOptions || undefined,
        });
      if (coldOnly) {
        // A short pass's peak varies more from run to run than a long one's: the base is a median.
        results.set(
          "cold",
          await repeated(options.scaleSmallRepeats, (n) =>
            pass("cold", false, n === 1 ? main : createDb(ctx, sim, `scale-${rows}-${n}`)),
          ),
        );
        return;
      }
      results.set("cold", await pass("cold", false));
      await sim.editRandom(options.changeFraction, options.seed);
      results.set("warm", await pass("warm", false));
      results.set("full", await pass("full", true));
      await sim.removeRandom(0.05, options.seed);
      results.set("full-5", await pass("full-5", true));
    });
  }
  const machine = machineFacts(run.loadStart, run.root);
  const markdown = [
    `Run ${run.startedAt.toISOString()} on commit ${machine.commit} by \`npm run bench -- --scale\` ` +
      `(${fixed((performance.now() - started) / 60_000, 1)} min; ${machine.cpu} x ${machine.cores}, Node ${machine.node}, ` +
      `load average ${machine.loadStart.map((n) => n.toFixed(2)).join(", ")} at start). ${options.users} users, servers ${options.servers}; ` +
      `"sweep s" is the pass's tail: the last export page answered to the pass settled (its last page, the sweep, settle). ` +
      (options.cappedNodeOptions
        ? `Every pass ran with NODE_OPTIONS=${options.cappedNodeOptions} and MALLOC_ARENA_MAX=${CONTAINER_MALLOC_ARENA_MAX}, as the container does.`
        : "Every pass ran with Node's default heap settings."),
    "",
    ...scaleTable(bySize),
    ...scaleGoals(bySize),
  ].join("\n");
  writeFileSync(run.out, `${markdown}\n`);
  process.stdout.write(`${markdown}\n`);
  ctx.log(`wrote ${run.out}`);
  // RESULTS.md quotes this file as its last section: refresh the quote without rerunning the rest.
  const results = join(run.root, options.out);
  if (existsSync(results)) {
    const text = readFileSync(results, "utf8");
    const at = text.indexOf(SCALE_HEADING);
    if (at >= 0)
      writeFileSync(results, [text.slice(0, at).trimEnd(), "", ...scaleSection(markdown)].join("\n"));
  }
}

export const SCALE_HEADING = "## Scale (`npm run bench -- --scale`)";

/** The section of RESULTS.md that quotes the scale report. */
export function scaleSection(scaleReport: string | undefined): string[] {
  return [
    SCALE_HEADING,
    "",
    scaleReport ??
      "Not run yet on this checkout: `npm run bench -- --scale` writes bench/RESULTS-scale.md, quoted here.",
    "",
  ];
}

function scaleTable(bySize: Map<number, SizeResults>): string[] {
  const out = [
    "| Workload | Rows | Wall s | Rows/s | CPU s | CPU µs/row | Peak RSS MB | Sweep s | DB MB |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const step of STEPS) {
    for (const results of bySize.values()) {
      const r = results.get(step.id);
      if (!r) continue;
      const tail = r.phases ? fixed(r.phases.tailMs / 1000, 1) : "-";
      out.push(
        `| ${step.title} | ${r.rows} | ${fixed(r.wallMs / 1000, 1)} | ${Math.round(rate(r))} | ${fixed(r.cpuSeconds, 1)} | ` +
          `${fixed((1e6 * r.cpuSeconds) / Math.max(1, r.rows), 0)} | ${mb(r.peakRssKb)} | ${tail} | ${r.db ? fixed(r.db.bytes / 1e6, 0) : "-"} |`,
      );
    }
  }
  return [...out, ""];
}

function scaleGoals(bySize: Map<number, SizeResults>): string[] {
  const sizes = [...bySize.keys()].sort((a, b) => a - b);
  const smallest = bySize.get(sizes[0] ?? 0)?.get("cold");
  const largest = bySize.get(sizes.at(-1) ?? 0);
  const mid = bySize.get(sizes.at(-2) ?? 0);
  const yes = (ok: boolean) => (ok ? "met" : "**not met**");
  const lines = ["| Goal | Measured | |", "|---|---|---|"];
  for (const [rows, results] of [...bySize].slice(-2)) {
    const peak = mb(Math.max(...[...results.values()].map((w) => w.peakRssKb)));
    lines.push(
      `| Peak RSS under 200 MB at ${rows} rows (every workload) | ${peak} MB | ${yes(peak < 200)} |`,
    );
  }
  const largeCold = largest?.get("cold");
  if (smallest && largeCold) {
    const ratio = largeCold.peakRssKb / smallest.peakRssKb;
    const runs = Number(smallest.notes.runs ?? 1);
    const base =
      runs > 1
        ? `${mb(largeCold.peakRssKb)} / ${mb(smallest.peakRssKb)} MB (the median of ${runs} cold passes at ${smallest.rows} rows, which peaked at ${smallest.notes.peakRssMB} MB; one pass at ${largeCold.rows})`
        : `${mb(largeCold.peakRssKb)} / ${mb(smallest.peakRssKb)} MB`;
    lines.push(
      `| Peak RSS growth, cold, ${largeCold.rows} / ${smallest.rows} rows, at most 1.15 | ${fixed(ratio)}: ${base} | ${yes(ratio <= 1.15)} |`,
    );
  }
  for (const step of ["full", "full-5"] as const) {
    const r = largest?.get(step);
    if (r?.phases)
      lines.push(
        `| Sweep of ${r.uniqueKeys} keys (${step === "full" ? "nothing" : "5%"} to revoke) under 15 s | ${fixed(r.phases.tailMs / 1000, 1)} s | ${yes(r.phases.tailMs < 15_000)} |`,
      );
  }
  for (const step of STEPS) {
    const a = mid?.get(step.id);
    const b = largest?.get(step.id);
    if (!a || !b) continue;
    const wall = b.wallMs / a.wallMs;
    const rows = b.rows / a.rows;
    lines.push(
      `| Wall time grows at most linearly: ${step.title} | x${fixed(wall, 1)} wall for x${fixed(rows, 1)} rows | ${yes(wall <= rows)} |`,
    );
  }
  return [...lines, ""];
}
