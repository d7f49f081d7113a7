/**
 * After access rows are removed: a key nobody can see any more becomes a tombstone (`delete`),
 * otherwise only who may see it changed (`access`). Runs inside the caller's transaction and
 * returns what it did: the caller counts it once that transaction has committed (`countRevocations`).
 */
import type { Metrics } from "../metrics.js";
import type { StoreOps } from "../store/store.js";
import type { SyncContext } from "./context.js";

const REVOKE_BATCH = 500;

/** Keys whose access was revoked, and how many of them nobody can see any more (tombstoned). */
export interface Revocations {
  revoked: number;
  deleted: number;
}

export async function applyRevocations(
  ctx: Pick<SyncContext, "now">,
  tx: StoreOps,
  mirror: string,
  keys: readonly string[],
  scope: string,
): Promise<Revocations> {
  const at = ctx.now().toISOString();
  let deleted = 0;
  // In batches (a few round trips each on PostgreSQL), each key once: a user who leaves takes all
  // of their keys at once.
  const distinct = [...new Set(keys)];
  if (distinct.length > 0) await tx.resources.lockTombstones();
  for (let from = 0; from < distinct.length; from += REVOKE_BATCH) {
    const batch = distinct.slice(from, from + REVOKE_BATCH);
    const states = await tx.resources.findStates(batch);
    const live = batch.filter((key) => states.get(key)?.deletedAt === null);
    const seen = await tx.access.keysWithAccess(live);
    const gone = live.filter((key) => !seen.has(key));
    await tx.resources.tombstoneAll(gone, at);
    await tx.changes.recordAll(
      live.map((key) => ({ key, op: seen.has(key) ? "access" : "delete", at, mirror, scope })),
    );
    deleted += gone.length;
  }
  return { revoked: keys.length, deleted };
}

/**
 * Keys revoked a batch at a time and each batch applied (`applyRevocations`), until `take`, asked
 * for at most REVOKE_BATCH keys, answers fewer: memory holds a batch, never a pair's every key
 * (a user who leaves a mirror of a million documents takes a million keys). `take` removes the
 * access rows of the keys it returns, so the next call returns the next ones.
 */
export async function revokeInBatches(
  ctx: Pick<SyncContext, "now">,
  tx: StoreOps,
  mirror: string,
  take: (limit: number) => Promise<readonly string[]>,
  scope: string,
): Promise<Revocations> {
  const total: Revocations = { revoked: 0, deleted: 0 };
  for (;;) {
    const keys = await take(REVOKE_BATCH);
    const done = await applyRevocations(ctx, tx, mirror, keys, scope);
    total.revoked += done.revoked;
    total.deleted += done.deleted;
    if (keys.length < REVOKE_BATCH) return total;
  }
}

/** The counters of revocations that committed. */
export function countRevocations(metrics: Metrics, mirror: string, r: Revocations): void {
  metrics.accessRevoked.inc({ mirror }, r.revoked);
  metrics.resourcesDeleted.inc({ mirror }, r.deleted);
}
