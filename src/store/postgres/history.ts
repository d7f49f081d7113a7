/**
 * The pass history (`../store.ts` HistoryRepo) on PostgreSQL: the trigger rows, their runs' totals
 * and the errors each pass met, paged newest first; and retention.
 */
import { type AnyColumn, and, asc, desc, eq, getTableColumns, inArray, lt, sql } from "drizzle-orm";
import type { HistoryRepo } from "../console-repos.js";
import {
  type ApprovalTotals,
  PRUNE_KEPT,
  prunableTriggers,
  type RunTotals,
  type SourceTotals,
  toPassRecords,
} from "../history-rows.js";
import { keepJson } from "../rows.js";
import type { Conn } from "./connection.js";
import { pgText } from "./pg-values.js";
import {
  dryRunRevoke,
  dryRunSeen,
  passErrors,
  runSources,
  runs,
  sweepApprovals,
  triggers,
} from "./schema.js";

const total = (column: AnyColumn) => sql<number>`coalesce(sum(${column}), 0)::int`;
const n = sql<number>`count(*)::int`;

/** A trigger's taken approval, its pairs' rows summed (they share who and when). */
const approvalTotals = {
  triggerRowId: sweepApprovals.triggerRowId,
  mirror: sweepApprovals.mirror,
  upTo: total(sweepApprovals.upTo),
  used: total(sweepApprovals.used),
  pairs: n,
  by: sql<string>`max(${sweepApprovals.by})`,
  at: sql<string>`min(${sweepApprovals.at})`.mapWith(sweepApprovals.at),
};

const PRUNABLE = prunableTriggers("$1::timestamptz", "(SELECT unnest($2::int[]))", "$3");

export function createHistoryRepo({ db, client }: Conn): HistoryRepo {
  return {
    async addErrors(triggerRowId, errors) {
      if (errors.length === 0) return;
      await db.insert(passErrors).values(errors.map((e) => ({ triggerRowId, ...e, error: pgText(e.error) })));
    },

    async errors(triggerRowId) {
      const { id: _id, triggerRowId: _t, ...errorColumns } = getTableColumns(passErrors);
      return await db
        .select(errorColumns)
        .from(passErrors)
        .where(eq(passErrors.triggerRowId, triggerRowId))
        .orderBy(asc(passErrors.id));
    },

    async list({ mirror, before, startedBefore, limit }) {
      const rows = await db
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
        .limit(limit);
      if (rows.length === 0) return [];
      const ids = rows.map((r) => r.id);
      const runTotals: RunTotals[] = await db
        .select({
          triggerRowId: runs.triggerRowId,
          status: runs.status,
          n,
          upserted: total(runs.upserted),
          unchanged: total(runs.unchanged),
          rejected: total(runs.rejected),
          keysNew: total(runs.keysNew),
          keysChanged: total(runs.keysChanged),
        })
        .from(runs)
        .where(inArray(runs.triggerRowId, ids))
        .groupBy(runs.triggerRowId, runs.status);
      const sourceTotals: SourceTotals[] = await db
        .select({
          triggerRowId: runs.triggerRowId,
          status: sql<string>`coalesce(${runSources.exportStatus}, 'unknown')`,
          n,
        })
        .from(runSources)
        .innerJoin(runs, eq(runs.syncId, runSources.syncId))
        .where(and(inArray(runs.triggerRowId, ids), eq(runs.ingest, "done")))
        .groupBy(runs.triggerRowId, runSources.exportStatus);
      const { id: _id, ...errorColumns } = getTableColumns(passErrors);
      const errors = await db
        .select(errorColumns)
        .from(passErrors)
        .where(inArray(passErrors.triggerRowId, ids))
        .orderBy(asc(passErrors.id));
      const approvals: ApprovalTotals[] = await db
        .select(approvalTotals)
        .from(sweepApprovals)
        .where(inArray(sweepApprovals.triggerRowId, ids))
        .groupBy(sweepApprovals.triggerRowId, sweepApprovals.mirror);
      return toPassRecords(rows, runTotals, sourceTotals, errors, approvals, keepJson);
    },

    async prunedNever() {
      return (await client.query<{ id: number }>(PRUNE_KEPT)).rows.map((r) => r.id);
    },

    async prune(finishedBefore, limit, keep) {
      const found = await client.query<{ id: number }>(PRUNABLE, [finishedBefore, keep, limit]);
      const ids = found.rows.map((r) => r.id);
      if (ids.length === 0) return 0;
      const runIds = db.select({ s: runs.syncId }).from(runs).where(inArray(runs.triggerRowId, ids));
      await db.delete(runSources).where(inArray(runSources.syncId, runIds));
      await db.delete(runs).where(inArray(runs.triggerRowId, ids));
      await db.delete(passErrors).where(inArray(passErrors.triggerRowId, ids));
      await db.delete(sweepApprovals).where(inArray(sweepApprovals.triggerRowId, ids));
      // A dry run killed before its end left its scratch behind.
      await db.delete(dryRunSeen).where(inArray(dryRunSeen.triggerRowId, ids));
      await db.delete(dryRunRevoke).where(inArray(dryRunRevoke.triggerRowId, ids));
      await db.delete(triggers).where(inArray(triggers.id, ids));
      return ids.length;
    },
  };
}
