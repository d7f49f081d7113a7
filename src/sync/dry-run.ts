/**
 * `sync --full --dry-run`: the full snapshot is triggered and read, but nothing is ingested; the
 * keys each user saw are compared with the mirror to print what the sweep would revoke and delete.
 * Watermarks, resources, access and changes stay as they were. Pairs that would lose all their
 * access (users who left, pairs past their grace) are included, as the real sweep revokes them.
 * The pairs whose sweep the real pass would hold, decided as the real sweep decides, are listed
 * and left out of the totals, as the real pass revokes nothing of them (nor deletes a key they keep
 * seeing); the outcome is the real pass's, so a held sweep makes the dry run `partial` too.
 */
import { Resource, type RunListSource } from "../api/schemas.js";
import type { PassError } from "../store/console-types.js";
import type { Run, SourceReport, Trigger } from "../store/types.js";
import type { MirrorPass } from "./context.js";
import { engineOf, fetchExportPages } from "./export-pages.js";
import { sourceReports } from "./ingest.js";
import { sourceSucceeded } from "./outcome.js";
import { runErrors } from "./record-problems.js";
import { settle } from "./settle.js";
import { readSourceErrors } from "./source-errors.js";
import type { DryRunReport, MirrorSummary } from "./summary.js";
import { findLeavingPairs, guardSweep } from "./sweep.js";
import { readTriggerRuns, sourcesOfRun } from "./trigger-runs.js";
import { waitAndIngest } from "./wait.js";

/** How many access rows and keys the dry run lists (`--json`); the totals count them all. */
export const DRY_RUN_LIST_LIMIT = 1000;

export async function dryRunSweep(
  pass: MirrorPass,
  trigger: Trigger,
  { startedAtMs, resumed }: { startedAtMs: number; resumed: boolean },
): Promise<MirrorSummary> {
  const { ctx, mirror } = pass;
  const { timedOut } = await waitAndIngest(pass, trigger, collectKeys);
  const read = await readTriggerRuns(ctx.store, trigger.id);
  const heldSweeps: DryRunReport["held_sweeps"] = [];
  for (const run of read.runs) {
    if (run.ingest !== "done") continue;
    for (const s of sourcesOfRun(read, run)) {
      if (!sourceSucceeded(run, s)) continue;
      const pair = { mirror: mirror.name, userEmail: run.userEmail, serverInstanceId: s.serverInstanceId };
      const revocable = await ctx.store.dryRun.collectPair(trigger.id, {
        ...pair,
        threshold: mirror.deleteAfterMissedFull,
      });
      if (revocable === 0) continue;
      // The guard as the real sweep asks it, with the approval the next full pass would take.
      const [total, approved] = await Promise.all([
        ctx.store.access.countPairKeys(pair),
        ctx.store.approvals.allowance(null, pair),
      ]);
      if (guardSweep(pass, trigger, { total, revocable, approved }).apply) continue;
      await ctx.store.dryRun.forgetPair(trigger.id, pair);
      heldSweeps.push({
        user_email: pair.userEmail,
        server_instance_id: pair.serverInstanceId,
        would_revoke: revocable,
        pair_keys: total,
      });
    }
  }
  for (const { pair } of (await findLeavingPairs(pass, trigger, read)).leaving)
    await ctx.store.dryRun.collectWholePair(trigger.id, pair);
  const before = pass.options.dryRunsBefore;
  const totals = await ctx.store.dryRun.totals(trigger.id, DRY_RUN_LIST_LIMIT, before ?? []);
  if (before) before.push(trigger.id);
  else await ctx.store.dryRun.release([trigger.id]);
  const byPair = (h: DryRunReport["held_sweeps"][number]) => `${h.user_email}\n${h.server_instance_id}`;
  heldSweeps.sort((a, b) => (byPair(a) < byPair(b) ? -1 : byPair(a) > byPair(b) ? 1 : 0));
  return settle(pass, trigger.id, read, {
    timedOut,
    resumed,
    startedAtMs,
    dryRun: { ...totals, held_sweeps: heldSweeps },
  });
}

async function collectKeys(
  pass: MirrorPass,
  trigger: Trigger,
  run: Run,
  runSources: readonly RunListSource[] | undefined,
): Promise<void> {
  const { ctx } = pass;
  const pages = fetchExportPages(ctx, run.syncId, 0, trigger.since, runSources?.length);
  let sources: SourceReport[] = [];
  let errors: PassError[] = [];
  // Counted as the real pass counts them: a run with a row refused for its shape sweeps nothing.
  let rejected = 0;
  try {
    for (let next = await pages.next(); next; next = await pages.next()) {
      const { page, offset, failAfter } = next;
      if (failAfter) throw failAfter;
      const keys = page.resources.flatMap((raw) => {
        const parsed = Resource.safeParse(raw);
        if (!parsed.success) rejected++;
        return parsed.success ? [parsed.data.key] : [];
      });
      await ctx.store.dryRun.seen(trigger.id, run.userEmail, keys);
      if (offset === 0) {
        sources = sourceReports(page, runSources);
        await ctx.store.runs.saveFirstPage(run.syncId, {
          schemaVersion: String(page.schema_version),
          engineVersion: engineOf(page),
          diagnostics: {},
          sources,
        });
      }
      if (page.page.next_offset === null) {
        const where = {
          mirror: pass.mirror.name,
          at: ctx.now().toISOString(),
          replica: ctx.replica?.name ?? null,
        };
        const serviceErrors = await readSourceErrors(pass, run, sources);
        errors = runErrors(where, { ...run, rejected }, sources, serviceErrors, { dryRun: true });
      }
    }
  } finally {
    pages.close();
  }
  // With the checkpoint, so a dry run resumed after a crash lists each error once.
  await ctx.store.transaction(async (tx) => {
    await tx.runs.checkpoint(run.syncId, null, {
      upserted: 0,
      unchanged: 0,
      rejected,
      keysNew: 0,
      keysChanged: 0,
    });
    await tx.history.addErrors(trigger.id, errors);
  });
}
