/**
 * The pass history (`../store.ts` HistoryRepo) on SQLite: the trigger rows, their runs' totals and
 * the errors each pass met, paged newest first; and retention.
 */
import { type AnyColumn, and, asc, count, desc, eq, getTableColumns, inArray, lt, sql } from "drizzle-orm";
import type { HistoryRepo } from "../console-repos.js";
import {
  type ApprovalTotals,
  PRUNE_KEPT,
  prunableTriggers,
  type RunTotals,
  type SourceTotals,
  toPassRecords,
} from "../history-rows.js";
import { parseJsonText } from "../rows.js";
import type { Db } from "./open.js";
import {
  dryRunRevoke,
  dryRunSeen,
  passErrors,
  runSources,
  runs,
  sweepApprovals,
  triggers,
} from "./schema.js";
import type { Sync } from "./sync-repo.js";

const total = (column: AnyColumn) => sql<number>`coalesce(sum(${column}), 0)`;

/** A trigger's taken approval, its pairs' rows summed (they share who and when). */
const approvalTotals = {
  triggerRowId: sweepApprovals.triggerRowId,
  mirror: sweepApprovals.mirror,
  upTo: total(sweepApprovals.upTo),
  used: total(sweepApprovals.used),
  pairs: count(),
  by: sql<string>`max(${sweepApprovals.by})`,
  at: sql<string>`min(${sweepApprovals.at})`,
};

export function createHistoryRepo(db: Db): Sync<HistoryRepo> {
  const sqlite = db.$client;
  const prunable = sqlite.prepare<[string, string, number], { id: number }>(
    prunableTriggers("?", "(SELECT value FROM json_each(?))", "?"),
  );
  const kept = sqlite.prepare<[], { id: number }>(PRUNE_KEPT);
  return {
    addErrors(triggerRowId, errors) {
      for (const e of errors)
        db.insert(passErrors)
          .values({ triggerRowId, ...e })
          .run();
    },

    errors(triggerRowId) {
      const { id: _id, triggerRowId: _t, ...errorColumns } = getTableColumns(passErrors);
      return db
        .select(errorColumns)
        .from(passErrors)
        .where(eq(passErrors.triggerRowId, triggerRowId))
        .orderBy(asc(passErrors.id))
        .all();
    },

    list({ mirror, before, startedBefore, limit }) {
      const rows = db
        .select()
        .from(triggers)
        .where(
          and(
            mirror === undefined ? undefined : eq(triggers.mirror, mirror),
            before === undefined ? undefined : lt(triggers.id, before),
            startedBefore === undefined ? undefined : lt(triggers.intentAt, startedBefore),
          ),
        )
        .orderBy(desc(triggers.id))
        .limit(limit)
        .all();
      if (rows.length === 0) return [];
      const ids = rows.map((r) => r.id);
      const runTotals: RunTotals[] = db
        .select({
          triggerRowId: runs.triggerRowId,
          status: runs.status,
          n: count(),
          upserted: total(runs.upserted),
          unchanged: total(runs.unchanged),
          rejected: total(runs.rejected),
          keysNew: total(runs.keysNew),
          keysChanged: total(runs.keysChanged),
        })
        .from(runs)
        .where(inArray(runs.triggerRowId, ids))
        .groupBy(runs.triggerRowId, runs.status)
        .all();
      const sourceTotals: SourceTotals[] = db
        .select({
          triggerRowId: runs.triggerRowId,
          status: sql<string>`coalesce(${runSources.exportStatus}, 'unknown')`,
          n: count(),
        })
        .from(runSources)
        .innerJoin(runs, eq(runs.syncId, runSources.syncId))
        .where(and(inArray(runs.triggerRowId, ids), eq(runs.ingest, "done")))
        .groupBy(runs.triggerRowId, runSources.exportStatus)
        .all();
      const { id: _id, ...errorColumns } = getTableColumns(passErrors);
      const errors = db
        .select(errorColumns)
        .from(passErrors)
        .where(inArray(passErrors.triggerRowId, ids))
        .orderBy(asc(passErrors.id))
        .all();
      const approvals: ApprovalTotals[] = db
        .select(approvalTotals)
        .from(sweepApprovals)
        .where(inArray(sweepApprovals.triggerRowId, ids))
        .groupBy(sweepApprovals.triggerRowId, sweepApprovals.mirror)
        .all();
      return toPassRecords(rows, runTotals, sourceTotals, errors, approvals, parseJsonText);
    },

    prunedNever: () => kept.all().map((r) => r.id),

    prune(finishedBefore, limit, keep) {
      const ids = prunable.all(finishedBefore, JSON.stringify(keep), limit).map((r) => r.id);
      if (ids.length === 0) return 0;
      const runIds = db.select({ s: runs.syncId }).from(runs).where(inArray(runs.triggerRowId, ids));
      db.delete(runSources).where(inArray(runSources.syncId, runIds)).run();
      db.delete(runs).where(inArray(runs.triggerRowId, ids)).run();
      db.delete(passErrors).where(inArray(passErrors.triggerRowId, ids)).run();
      db.delete(sweepApprovals).where(inArray(sweepApprovals.triggerRowId, ids)).run();
      // A dry run killed before its end left its scratch behind.
      db.delete(dryRunSeen).where(inArray(dryRunSeen.triggerRowId, ids)).run();
      db.delete(dryRunRevoke).where(inArray(dryRunRevoke.triggerRowId, ids)).run();
      db.delete(triggers).where(inArray(triggers.id, ids)).run();
      return ids.length;
    },
  };
}
