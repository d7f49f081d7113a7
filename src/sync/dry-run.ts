/**
 * `sync --full --dry-run`: the full snapshot is triggered and read, but nothing is ingested; the
 * keys each user saw are compared with the mirror to print what the sweep would revoke and delete.
 * Watermarks, resources, access and changes stay as they were. Pairs that would lose all their
 * access (users who left, pairs past their grace) are included, as the real sweep revokes them.
 */
import { Resource } from "../api/schemas.js";
import type { Run, Trigger } from "../store/types.js";
import type { MirrorPass } from "./context.js";
import { engineOf, fetchExportPages } from "./export-pages.js";
import { sourceReports } from "./ingest.js";
import { sourceSucceeded } from "./outcome.js";
import { settle } from "./settle.js";
import type { MirrorSummary } from "./summary.js";
import { findLeavingPairs } from "./sweep.js";
import { readTriggerRuns, sourcesOfRun } from "./trigger-runs.js";
import { waitAndIngest } from "./wait.js";

export async function dryRunSweep(
  pass: MirrorPass,
  trigger: Trigger,
  startedAtMs: number,
): Promise<MirrorSummary> {
  const { ctx, mirror } = pass;
  const { timedOut } = await waitAndIngest(pass, trigger, collectKeys);
  const read = await readTriggerRuns(ctx.store, trigger.id);
  for (const run of read.runs) {
    if (run.ingest !== "done") continue;
    for (const s of sourcesOfRun(read, run)) {
      if (!sourceSucceeded(run, s)) continue;
      await ctx.store.dryRun.collectPair(trigger.id, {
        mirror: mirror.name,
        userEmail: run.userEmail,
        serverInstanceId: s.serverInstanceId,
        threshold: mirror.deleteAfterMissedFull,
      });
    }
  }
  for (const { pair } of (await findLeavingPairs(pass, trigger, read)).leaving)
    await ctx.store.dryRun.collectWholePair(trigger.id, pair);
  const dryRun = await ctx.store.dryRun.totals(trigger.id);
  const summary = await settle(pass, trigger.id, read, {
    timedOut,
    resumed: false,
    startedAtMs,
    dryRun: true,
  });
  summary.dry_run = dryRun;
  summary.message = `dry run: the sweep would revoke ${dryRun.would_revoke} access row(s) and delete ${dryRun.would_delete} resource(s); nothing was written`;
  return summary;
}

async function collectKeys({ ctx }: MirrorPass, trigger: Trigger, run: Run): Promise<void> {
  const pages = fetchExportPages(ctx, run.syncId, 0, trigger.since);
  try {
    for (let next = await pages.next(); next; next = await pages.next()) {
      const { page, offset } = next;
      const keys = page.resources.flatMap((raw) => {
        const parsed = Resource.safeParse(raw);
        return parsed.success ? [parsed.data.key] : [];
      });
      await ctx.store.dryRun.seen(trigger.id, run.userEmail, keys);
      if (offset === 0) {
        await ctx.store.runs.saveFirstPage(run.syncId, {
          schemaVersion: String(page.schema_version),
          engineVersion: engineOf(page),
          diagnostics: {},
          sources: sourceReports(page),
        });
      }
    }
  } finally {
    pages.close();
  }
  await ctx.store.runs.checkpoint(run.syncId, null, {
    upserted: 0,
    unchanged: 0,
    rejected: 0,
    keysNew: 0,
    keysChanged: 0,
  });
}
