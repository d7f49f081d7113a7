/** Replicas' heartbeats, judged by the database's clock like leases. */
import { eq, sql } from "drizzle-orm";
import type { ReplicaRepo } from "../store.js";
import type { Conn } from "./connection.js";
import { replicas } from "./schema.js";

export function createReplicaRepo({ db }: Conn): ReplicaRepo {
  return {
    async beat(r, ttlSeconds) {
      const seen = {
        seenAt: sql`now()`,
        expiresAt: sql`now() + make_interval(secs => ${ttlSeconds}::int)`,
        slots: r.slots,
        running: r.running,
      };
      await db
        .insert(replicas)
        .values({ ...r, ...seen })
        .onConflictDoUpdate({ target: replicas.instanceId, set: seen });
      await db.delete(replicas).where(sql`${replicas.expiresAt} < now() - interval '1 day'`);
    },
    async leave(instanceId) {
      await db.delete(replicas).where(eq(replicas.instanceId, instanceId));
    },
    async live() {
      return db.select().from(replicas).where(sql`${replicas.expiresAt} > now()`).orderBy(replicas.startedAt);
    },
  };
}
