/**
 * Workloads 5 and 6: the simulator answers every API request after `--latency-ms` (100 ms by
 * default), as a remote service would. Each is measured with the mirror's default paging, with
 * one page at a time (pages_ahead 0: the paging before issue 10), and beside the fetch-and-parse
 * limit client holding as many export requests in flight as the mirror was seen to.
 */
import { type BenchOptions, docsForRows } from "./options.js";
import { withSimProcess } from "./sim-process.js";
import { type BenchContext, createDb, limitPass, mirrorPass, type WorkloadResult } from "./workloads.js";

const SEQUENTIAL = { pages_ahead_per_run: 0, pages_ahead_per_pass: 0 };

export async function latencyWorkloads(
  ctx: BenchContext,
  options: BenchOptions,
  add: (r: WorkloadResult) => void,
): Promise<void> {
  const shapes = [
    { id: "one-run", title: "5. One large run", users: 1 },
    { id: "many-runs", title: "6. Many runs", users: options.users },
  ];
  for (const shape of shapes) {
    const docs = docsForRows(options.latencyResources, shape.users);
    const title = `${shape.title}, ${options.latencyMs} ms latency`;
    const args = { cli: ctx.cli, seed: options.seed, users: shape.users, docs, servers: options.servers };
    await withSimProcess({ ...args, latencyMs: options.latencyMs }, ctx.log, async (sim) => {
      const piped = createDb(ctx, sim, shape.id);
      const mirror = await mirrorPass(ctx, sim, piped.setup, piped.db, { id: shape.id, title, full: false });
      add(mirror);
      const seq = createDb(ctx, sim, `${shape.id}-seq`, SEQUENTIAL);
      add(
        await mirrorPass(ctx, sim, seq.setup, seq.db, {
          id: `${shape.id}-seq`,
          title: `${title}, one page at a time`,
          full: false,
        }),
      );
      add(
        await limitPass(ctx, sim, {
          id: `limit-${shape.id}`,
          title: `Limit: ${title.slice(3)}, fetch + parse`,
          mode: "fetch",
          inFlight: mirror.exportInFlight,
        }),
      );
    });
  }
}
