/**
 * Pairs (mirror, user, server): watermarks, baselines, skips and retirement.
 */
import { and, count, eq, type Placeholder, sql } from "drizzle-orm";
import { awaitingBaselineOf, awaitingOnReturn } from "../awaiting-baseline.js";
import { p } from "../placeholders.js";
import type { PairRepo } from "../store.js";
import type { PairRef } from "../types.js";
import { type Conn, onFirstUse } from "./connection.js";
import { pairs } from "./schema.js";

/** The pair's row, by its values or by placeholders of a prepared statement. */
const pairWhere = (pair: { [K in keyof PairRef]: string | Placeholder }) =>
  and(
    eq(pairs.mirror, pair.mirror),
    eq(pairs.userEmail, pair.userEmail),
    eq(pairs.serverInstanceId, pair.serverInstanceId),
  );

export function createPairRepo({ db }: Conn): PairRepo {
  // Every run's last page runs `ran` and `succeeded` for each of its sources.
  const placeholders = {
    mirror: p("mirror"),
    userEmail: p("userEmail"),
    serverInstanceId: p("serverInstanceId"),
  };
  // Created as `ensure` would, or cleared. A retired pair (left, removed, past its grace) that
  // runs again lost its access, and one whose user was away from the project missed what since
  // moved past: each awaits a baseline, as a pair first seen does.
  const ranPair = onFirstUse(() =>
    db
      .insert(pairs)
      .values({ ...placeholders, firstSeenAt: p("at"), awaitingBaseline: true })
      .onConflictDoUpdate({
        target: [pairs.mirror, pairs.userEmail, pairs.serverInstanceId],
        set: {
          skipReason: null,
          authStatus: null,
          retiredAt: null,
          retiredReason: null,
          awaitingBaseline: awaitingOnReturn(pairs),
        },
      })
      .prepare("syncmirror_pairs_ran"),
  );
  // GREATEST skips NULL: an unset watermark takes the run's time. A full snapshot's success also
  // ends the wait for a baseline.
  const advance = onFirstUse(() =>
    db
      .update(pairs)
      .set({
        watermark: sql`GREATEST(${pairs.watermark}, ${p("at")}::timestamptz)`,
        awaitingBaseline: sql`CASE WHEN ${p("full")}::boolean THEN false ELSE ${pairs.awaitingBaseline} END`,
      })
      .where(pairWhere(placeholders))
      .prepare("syncmirror_pairs_advance"),
  );
  /** Creates the pair on first sight; a new pair awaits a baseline until a full snapshot succeeds for it. */
  const ensure = async (pair: PairRef, seenAt: string): Promise<void> => {
    await db
      .insert(pairs)
      .values({ ...pair, firstSeenAt: seenAt, awaitingBaseline: true })
      .onConflictDoNothing();
  };

  return {
    async ran(pair, runCreatedAt) {
      // One statement: a run's last page stays a round trip shorter.
      await ranPair().execute({ ...pair, at: runCreatedAt });
    },

    async succeeded(pair, runCreatedAt, full) {
      await advance().execute({ ...pair, at: runCreatedAt, full });
    },

    async skipped(pair, s) {
      await ensure(pair, s.seenAt);
      await db.update(pairs).set({ skipReason: s.reason, authStatus: s.authStatus }).where(pairWhere(pair));
    },

    async retire(pair, reason, at) {
      await ensure(pair, at);
      await db.update(pairs).set({ retiredAt: at, retiredReason: reason }).where(pairWhere(pair));
    },

    async markAwaitingBaseline(pair) {
      await db.update(pairs).set({ awaitingBaseline: true }).where(pairWhere(pair));
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
