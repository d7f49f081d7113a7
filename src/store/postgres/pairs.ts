/**
 * Pairs (mirror, user, server): watermarks, baselines, skips and retirement.
 */
import { and, count, eq, sql } from "drizzle-orm";
import { awaitingBaselineOf } from "../awaiting-baseline.js";
import type { PairRepo } from "../store.js";
import type { PairRef } from "../types.js";
import type { Conn } from "./connection.js";
import { pairs } from "./schema.js";

const pairWhere = (p: PairRef) =>
  and(
    eq(pairs.mirror, p.mirror),
    eq(pairs.userEmail, p.userEmail),
    eq(pairs.serverInstanceId, p.serverInstanceId),
  );

export function createPairRepo({ db }: Conn): PairRepo {
  /** Creates the pair on first sight; a new pair awaits a baseline until a full snapshot succeeds for it. */
  const ensure = async (p: PairRef, seenAt: string): Promise<void> => {
    await db
      .insert(pairs)
      .values({ ...p, firstSeenAt: seenAt, awaitingBaseline: true })
      .onConflictDoNothing();
  };

  return {
    async ran(p, runCreatedAt) {
      // One statement (a run's last page stays a round trip shorter): created as `ensure` would,
      // or cleared. A retired pair (left, removed, past its grace) that runs again lost its
      // access: it awaits a baseline, as a pair first seen does.
      await db
        .insert(pairs)
        .values({ ...p, firstSeenAt: runCreatedAt, awaitingBaseline: true })
        .onConflictDoUpdate({
          target: [pairs.mirror, pairs.userEmail, pairs.serverInstanceId],
          set: {
            skipReason: null,
            authStatus: null,
            retiredAt: null,
            retiredReason: null,
            awaitingBaseline: sql`${pairs.awaitingBaseline} OR ${pairs.retiredAt} IS NOT NULL`,
          },
        });
    },

    async succeeded(p, runCreatedAt, full) {
      await db
        .update(pairs)
        .set({
          // GREATEST skips NULL: an unset watermark takes the run's time.
          watermark: sql`GREATEST(${pairs.watermark}, ${runCreatedAt}::timestamptz)`,
          ...(full ? { awaitingBaseline: false } : {}),
        })
        .where(pairWhere(p));
    },

    async skipped(p, s) {
      await ensure(p, s.seenAt);
      await db.update(pairs).set({ skipReason: s.reason, authStatus: s.authStatus }).where(pairWhere(p));
    },

    async retire(p, reason, at) {
      await ensure(p, at);
      await db.update(pairs).set({ retiredAt: at, retiredReason: reason }).where(pairWhere(p));
    },

    async markAwaitingBaseline(p) {
      await db.update(pairs).set({ awaitingBaseline: true }).where(pairWhere(p));
    },

    async listForMirror(mirror) {
      return db.select().from(pairs).where(eq(pairs.mirror, mirror));
    },

    async countAwaitingBaseline(mirror) {
      const [row] = await db.select({ n: count() }).from(pairs).where(awaitingBaselineOf(pairs, mirror));
      return row?.n ?? 0;
    },
  };
}
