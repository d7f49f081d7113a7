/**
 * Leases and cron ticks shared by replicas (SPEC "Scale-out"). Expiry is judged by the database
 * clock (`now()`), so replicas whose clocks differ by a few seconds still agree on who holds what.
 */
import { and, eq, gt, sql } from "drizzle-orm";
import type { LeaseRepo } from "../store.js";
import type { LeaseHolder } from "../types.js";
import type { Conn } from "./connection.js";
import { leases, ticks } from "./schema.js";

export function createLeaseRepo({ db }: Conn): LeaseRepo {
  return {
    async acquire(mirror, holder, ttlSeconds, replacing = holder) {
      const expires = sql`now() + make_interval(secs => ${ttlSeconds})`;
      const taken = await db
        .insert(leases)
        .values({ mirror, holder, expiresAt: expires })
        .onConflictDoUpdate({
          target: leases.mirror,
          set: { holder, expiresAt: expires },
          setWhere: sql`${leases.holder} IN (${holder}, ${replacing}) OR ${leases.expiresAt} <= now()`,
        })
        .returning({ mirror: leases.mirror });
      return taken.length === 1;
    },

    async isHeld(mirror, holder) {
      const rows = await db
        .select({ m: leases.mirror })
        .from(leases)
        .where(and(eq(leases.mirror, mirror), eq(leases.holder, holder), gt(leases.expiresAt, sql`now()`)));
      return rows.length > 0;
    },

    async release(mirror, holder) {
      await db.delete(leases).where(and(eq(leases.mirror, mirror), eq(leases.holder, holder)));
    },

    async holders() {
      const rows = await db.select().from(leases).where(gt(leases.expiresAt, sql`now()`));
      return new Map<string, LeaseHolder>(
        rows.map((r) => [r.mirror, { holder: r.holder, expiresAt: r.expiresAt }]),
      );
    },

    async claimTick(mirror, mode, tickAt, holder) {
      const taken = await db
        .insert(ticks)
        .values({ mirror, mode, tickAt, holder })
        .onConflictDoNothing()
        .returning({ mirror: ticks.mirror });
      return taken.length === 1;
    },
  };
}
