/**
 * `approve-sweep` (`../store.ts` SweepApprovalRepo) on SQLite: one row per held pair, pending until
 * a full pass takes the mirror's rows.
 */
import { and, asc, count, eq, isNull, max, min, sql, sum } from "drizzle-orm";
import type { SweepApprovalRepo } from "../console-repos.js";
import type { SweepApproval } from "../console-types.js";
import { heldPairs } from "../history-rows.js";
import type { PairRef } from "../types.js";
import type { Db } from "./open.js";
import { sweepApprovals as a, problems } from "./schema.js";
import type { Sync } from "./sync-repo.js";

/** The pair's row of the trigger's approval; of the mirror's pending approval when `triggerRowId` is null. */
const pairOf = (triggerRowId: number | null, pair: PairRef) =>
  and(
    triggerRowId === null ? isNull(a.triggerRowId) : eq(a.triggerRowId, triggerRowId),
    eq(a.mirror, pair.mirror),
    eq(a.userEmail, pair.userEmail),
    eq(a.serverInstanceId, pair.serverInstanceId),
  );

export function createSweepApprovalRepo(db: Db): Sync<SweepApprovalRepo> {
  const pending = (mirror?: string): SweepApproval[] =>
    db
      .select({
        mirror: a.mirror,
        upTo: sum(a.upTo).mapWith(Number),
        pairs: count(),
        by: sql<string>`${max(a.by)}`,
        at: sql<string>`${min(a.at)}`,
      })
      .from(a)
      .where(and(isNull(a.triggerRowId), mirror === undefined ? undefined : eq(a.mirror, mirror)))
      .groupBy(a.mirror)
      .orderBy(asc(a.mirror))
      .all();
  return {
    approve(mirror, by) {
      const held = heldPairs(
        db
          .select()
          .from(problems)
          .where(and(eq(problems.mirror, mirror), eq(problems.kind, "held_sweep")))
          .all(),
      );
      if (held.length === 0) return null;
      db.delete(a)
        .where(and(eq(a.mirror, mirror), isNull(a.triggerRowId)))
        .run();
      for (const h of held)
        db.insert(a)
          .values({ ...h, ...by })
          .run();
      return pending(mirror)[0] ?? null;
    },

    pending: () => pending(),

    take(triggerRowId, mirror) {
      const taken = db.select({ id: a.id }).from(a).where(eq(a.triggerRowId, triggerRowId)).limit(1).get();
      if (taken) return;
      db.update(a)
        .set({ triggerRowId })
        .where(and(eq(a.mirror, mirror), isNull(a.triggerRowId)))
        .run();
    },

    allowance(triggerRowId, pair) {
      return db.select({ upTo: a.upTo }).from(a).where(pairOf(triggerRowId, pair)).get()?.upTo ?? null;
    },

    use(triggerRowId, pair, revoked) {
      db.update(a).set({ used: revoked }).where(pairOf(triggerRowId, pair)).run();
    },
  };
}
