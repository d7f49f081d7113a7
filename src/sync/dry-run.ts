/**
 * `sync --full --dry-run`: the full snapshot is triggered and read, but nothing is ingested; the
 * keys each user saw are compared with the mirror to print what the sweep would revoke and delete.
 * Watermarks, resources, access and changes stay as they were. Pairs that would lose all their
 * access (users who left, pairs past their grace) are included, as the real sweep revokes them.
 */
import { Resource } from "../api/schemas.js";
import type { RunRow, TriggerRow } from "../store/state.js";
import type { MirrorPass } from "./context.js";
import { engineOf, exportPages, sourceReports } from "./ingest.js";
import { sourceSucceeded } from "./outcome.js";
import { settle } from "./settle.js";
import type { MirrorSummary } from "./summary.js";
import { findLeavingPairs } from "./sweep.js";
import { waitAndIngest } from "./wait.js";

export async function dryRunSweep(
  pass: MirrorPass,
  trigger: TriggerRow,
  startedAtMs: number,
): Promise<MirrorSummary> {
  const { ctx, mirror } = pass;
  const { timedOut } = await waitAndIngest(pass, trigger, collectKeys);
  for (const run of ctx.store.state.runsOf(trigger.id)) {
    if (run.ingest !== "done") continue;
    for (const s of ctx.store.state.sourcesOf(run.syncId)) {
      if (!sourceSucceeded(run, s)) continue;
      ctx.store.dryRun.collectPair({
        mirror: mirror.name,
        userEmail: run.userEmail,
        serverInstanceId: s.serverInstanceId,
        threshold: mirror.deleteAfterMissedFull,
      });
    }
  }
  for (const { pair } of (await findLeavingPairs(pass, trigger)) ?? [])
    ctx.store.dryRun.collectWholePair(pair);
  const dryRun = ctx.store.dryRun.totals();
  const summary = settle(pass, trigger.id, { timedOut, resumed: false, startedAtMs, dryRun: true });
  summary.dry_run = dryRun;
  summary.message = `dry run: the sweep would revoke ${dryRun.would_revoke} access row(s) and delete ${dryRun.would_delete} resource(s); nothing was written`;
  return summary;
}

async function collectKeys({ ctx }: MirrorPass, _trigger: TriggerRow, run: RunRow): Promise<void> {
  for await (const { page, offset } of exportPages(ctx, run.syncId, 0)) {
    const keys = page.resources.flatMap((raw) => {
      const parsed = Resource.safeParse(raw);
      return parsed.success ? [parsed.data.key] : [];
    });
    ctx.store.dryRun.seen(run.userEmail, keys);
    if (offset === 0) {
      ctx.store.state.saveFirstPage(run.syncId, {
        schemaVersion: String(page.schema_version),
        engineVersion: engineOf(page),
        diagnostics: {},
        sources: sourceReports(page),
      });
    }
  }
  ctx.store.state.checkpoint(run.syncId, null, { upserted: 0, unchanged: 0, rejected: 0 });
}
