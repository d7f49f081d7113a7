/** Daemons' heartbeats on SQLite (the local clock: one host, one writer). */
import { eq, gt, lt } from "drizzle-orm";
import type { ReplicaRepo } from "../store.js";
import type { Db } from "./open.js";
import { replicas } from "./schema.js";
import type { Sync } from "./sync-repo.js";

/** How long a replica's row stays after its heartbeat expired. */
const PRUNE_AFTER_MS = 86_400_000;

export function createReplicaRepo(db: Db, now: () => Date): Sync<ReplicaRepo> {
  const iso = (offsetMs = 0) => new Date(now().getTime() + offsetMs).toISOString();
  return {
    beat(r, ttlSeconds) {
      const seen = { seenAt: iso(), expiresAt: iso(ttlSeconds * 1000), slots: r.slots, running: r.running };
      db.insert(replicas)
        .values({ ...r, ...seen })
        .onConflictDoUpdate({ target: replicas.instanceId, set: seen })
        .run();
      db.delete(replicas)
        .where(lt(replicas.expiresAt, iso(-PRUNE_AFTER_MS)))
        .run();
    },
    leave(instanceId) {
      db.delete(replicas).where(eq(replicas.instanceId, instanceId)).run();
    },
    live() {
      return db
        .select()
        .from(replicas)
        .where(gt(replicas.expiresAt, iso()))
        .orderBy(replicas.startedAt)
        .all();
    },
  };
}
