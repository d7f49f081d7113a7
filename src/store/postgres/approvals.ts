/**
 * `approve-sweep` (`../store.ts` SweepApprovalRepo) on PostgreSQL: one row per held pair, pending
 * until a full pass that sweeps the pair takes it.
 */
import { and, asc, eq, isNull, max, min, sql, sum } from "drizzle-orm";
import type { SweepApprovalRepo } from "../console-repos.js";
import type { SweepApproval } from "../console-types.js";
import { HELD_SWEEP_OPEN, heldPairs } from "../history-rows.js";
import type { PairRef } from "../types.js";
import type { Conn } from "./connection.js";
import { sweepApprovals as a, problems } from "./schema.js";

const pendingRows = and(isNull(a.triggerRowId), sql.raw(HELD_SWEEP_OPEN));

/** The pair's row of the trigger's approval; of the mirror's pending approval when `triggerRowId` is null. */
const pairOf = (triggerRowId: number | null, pair: PairRef) =>
  and(
    triggerRowId === null ? pendingRows : eq(a.triggerRowId, triggerRowId),
    eq(a.mirror, pair.mirror),
    eq(a.userEmail, pair.userEmail),
    eq(a.serverInstanceId, pair.serverInstanceId),
  );

/**
 * The mirror's pending approvals of the pairs swept ($3, $4), but a pair's this trigger took
 * already; those whose sweep is no longer held dropped (disjoint rows: one statement may not both
 * delete and update a row).
 */
const TAKE_SQL = `WITH dropped AS (
    DELETE FROM sweep_approvals WHERE mirror = $2 AND trigger_row_id IS NULL AND NOT ${HELD_SWEEP_OPEN}
  )
  UPDATE sweep_approvals SET trigger_row_id = $1
  WHERE mirror = $2 AND trigger_row_id IS NULL AND ${HELD_SWEEP_OPEN}
    AND (user_email, server_instance_id) IN (SELECT * FROM unnest($3::text[], $4::text[]))
    AND NOT EXISTS (SELECT 1 FROM sweep_approvals t WHERE t.trigger_row_id = $1
      AND t.user_email = sweep_approvals.user_email AND t.server_instance_id = sweep_approvals.server_instance_id)`;

export function createSweepApprovalRepo({ db, client }: Conn): SweepApprovalRepo {
  const pending = (mirror?: string): Promise<SweepApproval[]> =>
    db
      .select({
        mirror: a.mirror,
        upTo: sum(a.upTo).mapWith(Number),
        pairs: sql<number>`count(*)::int`,
        by: sql<string>`${max(a.by)}`,
        at: sql<string>`${min(a.at)}`.mapWith(a.at),
      })
      .from(a)
      .where(and(pendingRows, mirror === undefined ? undefined : eq(a.mirror, mirror)))
      .groupBy(a.mirror)
      .orderBy(asc(a.mirror));
  return {
    async approve(mirror, by) {
      const rows = await db
        .select()
        .from(problems)
        .where(and(eq(problems.mirror, mirror), eq(problems.kind, "held_sweep")));
      const held = heldPairs(rows);
      if (held.length === 0) return null;
      await db.delete(a).where(and(eq(a.mirror, mirror), isNull(a.triggerRowId)));
      await db.insert(a).values(held.map((h) => ({ ...h, ...by })));
      return (await pending(mirror))[0] ?? null;
    },

    pending: () => pending(),

    async take(triggerRowId, mirror, sweeps) {
      // One statement, sent as it is called (drizzle's sends a few microtasks later, behind
      // statements called after it): it goes out with the sweep transaction's first statements.
      await client.query({
        text: TAKE_SQL,
        values: [triggerRowId, mirror, sweeps.map((p) => p.userEmail), sweeps.map((p) => p.serverInstanceId)],
      });
    },

    async allowance(triggerRowId, pair) {
      const [row] = await db.select({ upTo: a.upTo }).from(a).where(pairOf(triggerRowId, pair));
      return row?.upTo ?? null;
    },

    async use(triggerRowId, pair, revoked) {
      await db.update(a).set({ used: revoked }).where(pairOf(triggerRowId, pair));
    },
  };
}
