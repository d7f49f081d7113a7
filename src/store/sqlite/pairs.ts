/**
 * Pairs (mirror, user, server): watermarks, baselines, skips and retirement.
 */
import { and, count, eq, type Placeholder, sql } from "drizzle-orm";
import { awaitingBaselineOf, awaitingOnReturn } from "../awaiting-baseline.js";
import { p } from "../placeholders.js";
import type { PairRepo } from "../store.js";
import type { PairRef } from "../types.js";
import type { Db } from "./open.js";
import { pairs } from "./schema.js";
import type { Sync } from "./sync-repo.js";

/** The pair's row, by its values or by placeholders of a prepared statement. */
const pairWhere = (pair: { [K in keyof PairRef]: string | Placeholder }) =>
  and(
    eq(pairs.mirror, pair.mirror),
    eq(pairs.userEmail, pair.userEmail),
    eq(pairs.serverInstanceId, pair.serverInstanceId),
  );

export function createPairRepo(db: Db): Sync<PairRepo> {
  // Every run's last page runs `ran` and `succeeded` for each of its sources: prepared once.
  const preparedWhere = pairWhere({
    mirror: p("mirror"),
    userEmail: p("userEmail"),
    serverInstanceId: p("serverInstanceId"),
  });
  const insertPair = db
    .insert(pairs)
    .values({
      mirror: p("mirror"),
      userEmail: p("userEmail"),
      serverInstanceId: p("serverInstanceId"),
      firstSeenAt: p("seenAt"),
      awaitingBaseline: true,
    })
    .onConflictDoNothing()
    .prepare();
  // A retired pair (left, removed, past its grace) that runs again lost its access, and one whose
  // user was away from the project missed what since moved past: each awaits a baseline, as a
  // pair first seen does.
  const clearSkip = db
    .update(pairs)
    .set({
      skipReason: null,
      authStatus: null,
      retiredAt: null,
      retiredReason: null,
      awaitingBaseline: awaitingOnReturn(pairs),
    })
    .where(preparedWhere)
    .prepare();
  // A full snapshot's success also ends the wait for a baseline (`full`: 1 or 0).
  const advance = db
    .update(pairs)
    .set({
      watermark: sql`CASE WHEN ${pairs.watermark} IS NULL OR ${pairs.watermark} < ${p("at")} THEN ${p("at")} ELSE ${pairs.watermark} END`,
      awaitingBaseline: sql`CASE WHEN ${p("full")} = 1 THEN 0 ELSE ${pairs.awaitingBaseline} END`,
    })
    .where(preparedWhere)
    .prepare();

  /** Creates the pair on first sight; a new pair awaits a baseline until a full snapshot succeeds for it. */
  const ensure = (pair: PairRef, seenAt: string): void => {
    insertPair.run({ ...pair, seenAt });
  };

  return {
    ran(pair: PairRef, runCreatedAt: string): void {
      ensure(pair, runCreatedAt);
      clearSkip.run(pair);
    },

    succeeded(pair: PairRef, runCreatedAt: string, full: boolean): void {
      advance.run({ ...pair, at: runCreatedAt, full: full ? 1 : 0 });
    },

    skipped(pair: PairRef, s: { reason: string; authStatus: string | null; seenAt: string }): void {
      ensure(pair, s.seenAt);
      db.update(pairs).set({ skipReason: s.reason, authStatus: s.authStatus }).where(pairWhere(pair)).run();
    },

    retire(pair: PairRef, reason: string, at: string): void {
      ensure(pair, at);
      db.update(pairs).set({ retiredAt: at, retiredReason: reason }).where(pairWhere(pair)).run();
    },

    markAwaitingBaseline(pair: PairRef): void {
      db.update(pairs).set({ awaitingBaseline: true }).where(pairWhere(pair)).run();
    },

    listForMirror(mirror: string) {
      return db.select().from(pairs).where(eq(pairs.mirror, mirror)).all();
    },

    countAwaitingBaseline(mirror: string): number {
      return db.select({ n: count() }).from(pairs).where(awaitingBaselineOf(pairs, mirror)).get()?.n ?? 0;
    },
  };
}
