/**
 * Pairs (mirror, user, server): watermarks, baselines, skips and retirement.
 */
import { and, count, eq, isNull, sql } from "drizzle-orm";
import type { PairRepo } from "../store.js";
import type { PairRef } from "../types.js";
import type { Db } from "./open.js";
import { pairs } from "./schema.js";
import type { Sync } from "./sync-repo.js";

const pairWhere = (p: PairRef) =>
  and(
    eq(pairs.mirror, p.mirror),
    eq(pairs.userEmail, p.userEmail),
    eq(pairs.serverInstanceId, p.serverInstanceId),
  );

export function createPairRepo(db: Db): Sync<PairRepo> {
  /** Creates the pair on first sight; a new pair awaits a baseline until a full snapshot succeeds for it. */
  const ensure = (p: PairRef, seenAt: string): void => {
    db.insert(pairs)
      .values({ ...p, firstSeenAt: seenAt, awaitingBaseline: true })
      .onConflictDoNothing()
      .run();
  };

  return {
    ran(p: PairRef, runCreatedAt: string): void {
      ensure(p, runCreatedAt);
      db.update(pairs)
        .set({ skipReason: null, authStatus: null, retiredAt: null, retiredReason: null })
        .where(pairWhere(p))
        .run();
    },

    succeeded(p: PairRef, runCreatedAt: string, full: boolean): void {
      db.update(pairs)
        .set({
          watermark: sql`CASE WHEN ${pairs.watermark} IS NULL OR ${pairs.watermark} < ${runCreatedAt} THEN ${runCreatedAt} ELSE ${pairs.watermark} END`,
          ...(full ? { awaitingBaseline: false } : {}),
        })
        .where(pairWhere(p))
        .run();
    },

    skipped(p: PairRef, s: { reason: string; authStatus: string | null; seenAt: string }): void {
      ensure(p, s.seenAt);
      db.update(pairs).set({ skipReason: s.reason, authStatus: s.authStatus }).where(pairWhere(p)).run();
    },

    retire(p: PairRef, reason: string, at: string): void {
      ensure(p, at);
      db.update(pairs).set({ retiredAt: at, retiredReason: reason }).where(pairWhere(p)).run();
    },

    markAwaitingBaseline(p: PairRef): void {
      db.update(pairs).set({ awaitingBaseline: true }).where(pairWhere(p)).run();
    },

    listForMirror(mirror: string) {
      return db.select().from(pairs).where(eq(pairs.mirror, mirror)).all();
    },

    countAwaitingBaseline(mirror: string): number {
      return (
        db
          .select({ n: count() })
          .from(pairs)
          .where(and(eq(pairs.mirror, mirror), eq(pairs.awaitingBaseline, true), isNull(pairs.retiredAt)))
          .get()?.n ?? 0
      );
    },
  };
}
