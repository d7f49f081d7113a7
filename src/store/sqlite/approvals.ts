/**
 * `approve-sweep` (`../store.ts` SweepApprovalRepo) on SQLite: one row per held pair, pending until
 * a full pass that sweeps the pair takes it.
 */
import { and, asc, count, eq, inArray, isNull, max, min, not, sql, sum } from "drizzle-orm";
import type { SweepApprovalRepo } from "../console-repos.js";
import type { SweepApproval } from "../console-types.js";
import { HELD_SWEEP_OPEN, heldPairs } from "../history-rows.js";
import type { PairRef } from "../types.js";
import type { Db } from "./open.js";
import { sweepApprovals as a, problems } from "./schema.js";
import type { Sync } from "./sync-repo.js";

const heldOpen = sql.raw(HELD_SWEEP_OPEN);
const pendingRows = and(isNull(a.triggerRowId), heldOpen);
const pairKey = (p: Omit<PairRef, "mirror">) => `${p.userEmail}\n${p.serverInstanceId}`;

/** The pair's row of the trigger's approval; of the mirror's pending approval when `triggerRowId` is null. */
const pairOf = (triggerRowId: number | null, pair: PairRef) =>
  and(
    triggerRowId === null ? pendingRows : eq(a.triggerRowId, triggerRowId),
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
      .where(and(pendingRows, mirror === undefined ? undefined : eq(a.mirror, mirror)))
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

    take(triggerRowId, mirror, sweeps) {
      const pendingOf = and(eq(a.mirror, mirror), isNull(a.triggerRowId));
      db.delete(a)
        .where(and(pendingOf, not(heldOpen)))
        .run();
      const pairCols = { id: a.id, userEmail: a.userEmail, serverInstanceId: a.serverInstanceId };
      const taken = new Set(
        db.select(pairCols).from(a).where(eq(a.triggerRowId, triggerRowId)).all().map(pairKey),
      );
      const swept = new Set(sweeps.map(pairKey));
      const ids = db
        .select(pairCols)
        .from(a)
        .where(pendingOf)
        .all()
        .filter((r) => swept.has(pairKey(r)) && !taken.has(pairKey(r)))
        .map((r) => r.id);
      if (ids.length > 0) db.update(a).set({ triggerRowId }).where(inArray(a.id, ids)).run();
    },

    allowance(triggerRowId, pair) {
      return db.select({ upTo: a.upTo }).from(a).where(pairOf(triggerRowId, pair)).get()?.upTo ?? null;
    },

    use(triggerRowId, pair, revoked) {
      db.update(a).set({ used: revoked }).where(pairOf(triggerRowId, pair)).run();
    },
  };
}
