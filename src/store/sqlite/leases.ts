/**
 * Leases and cron ticks on SQLite. One process holds the database's writer lock, so these never
 * contend; they exist so the sync code runs the same whichever store it has.
 */
import { and, eq, gt } from "drizzle-orm";
import type { LeaseRepo } from "../store.js";
import type { LeaseHolder } from "../types.js";
import type { Db } from "./open.js";
import { leases, ticks } from "./schema.js";
import { p, type Sync } from "./sync-repo.js";

export function createLeaseRepo(db: Db, now: () => Date): Sync<LeaseRepo> {
  const iso = (offsetSeconds = 0) => new Date(now().getTime() + offsetSeconds * 1000).toISOString();
  const take = db.$client.prepare<[string, string, string, string, string], { mirror: string }>(
    `INSERT INTO leases (mirror, holder, expires_at) VALUES (?, ?, ?)
     ON CONFLICT (mirror) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
     WHERE leases.holder IN (excluded.holder, ?) OR leases.expires_at <= ? RETURNING mirror`,
  );
  // Every page checks the lease inside its transaction: prepared once.
  const held = db
    .select({ m: leases.mirror })
    .from(leases)
    .where(
      and(eq(leases.mirror, p("mirror")), eq(leases.holder, p("holder")), gt(leases.expiresAt, p("now"))),
    )
    .prepare();
  return {
    acquire(mirror, holder, ttlSeconds, replacing = holder) {
      return take.get(mirror, holder, iso(ttlSeconds), replacing, iso()) !== undefined;
    },
    isHeld(mirror, holder) {
      return held.get({ mirror, holder, now: iso() }) !== undefined;
    },
    release(mirror, holder) {
      db.delete(leases)
        .where(and(eq(leases.mirror, mirror), eq(leases.holder, holder)))
        .run();
    },
    holders() {
      const rows = db.select().from(leases).where(gt(leases.expiresAt, iso())).all();
      return new Map<string, LeaseHolder>(
        rows.map((r) => [r.mirror, { holder: r.holder, expiresAt: r.expiresAt }]),
      );
    },
    claimTick(mirror, mode, tickAt, holder) {
      return (
        db.insert(ticks).values({ mirror, mode, tickAt, holder }).onConflictDoNothing().returning().all()
          .length === 1
      );
    },
  };
}
