/**
 * After access rows are removed: a key nobody can see any more becomes a tombstone (`delete`),
 * otherwise only who may see it changed (`access`). Runs inside the caller's transaction and
 * returns what it did, counted once that transaction has committed (`countRevocations`).
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
  // In batches, each key once: a user who leaves takes all of their keys at once. What does not
  // need another's answer is issued with it (one round trip on PostgreSQL, whose server runs them
  // in the order they were sent): the lock with the first batch's read, which it still precedes,
  // and the tombstones with the changes: a batch takes three round trips, not five.
  const distinct = [...new Set(keys)];
  for (let from = 0; from < distinct.length; from += REVOKE_BATCH) {
    const batch = distinct.slice(from, from + REVOKE_BATCH);
    const [, states] = await Promise.all([
      from === 0 ? tx.resources.lockTombstones() : undefined,
      tx.resources.findStates(batch),
    ]);
    const live = batch.filter((key) => states.get(key)?.deletedAt === null);
    const seen = await tx.access.keysWithAccess(live);
    const gone = live.filter((key) => !seen.has(key));
    await Promise.all([
      tx.resources.tombstoneAll(gone, at),
      tx.changes.recordAll(
        live.map((key) => ({ key, op: seen.has(key) ? "access" : "delete", at, mirror, scope })),
      ),
    ]);
    deleted += gone.length;
  }
  return { revoked: keys.length, deleted };
}

/** A batch of revocations; `last` when it took fewer keys than asked: none is left to take. */
export interface RevokedBatch extends Revocations {
  last: boolean;
}

/**
 * One batch: at most REVOKE_BATCH keys taken and applied (`applyRevocations`). `take` removes the
 * access rows of the keys it returns, so the next batch takes the next ones.
 */
export async function revokeBatch(
  ctx: Pick<SyncContext, "now">,
  tx: StoreOps,
  mirror: string,
  take: (limit: number) => Promise<readonly string[]>,
  scope: string,
): Promise<RevokedBatch> {
  const keys = await take(REVOKE_BATCH);
  return { ...(await applyRevocations(ctx, tx, mirror, keys, scope)), last: keys.length < REVOKE_BATCH };
}

/**
 * `batch` run in a transaction of its own, again and again until it answers `last` (`first`: the
 * first of this call). Memory holds a batch, never a pair's every key, and no transaction grows
 * with what a pair holds (a user who leaves a mirror of a million documents takes a million keys):
 * each batch begins on a turn of the event loop of its own (`letTimersRun`), so the lease renewals
 * and the other mirrors' writes run between two batches. Each batch's revocations are counted once
 * it committed. Killed between two batches, what committed stays: `batch` must record what a
 * resumed pass needs to go on with the keys left. Returns the totals, and the last batch as it
 * answered.
 */
export async function revokeInTransactions<B extends RevokedBatch>(
  { store, metrics, crashPoint }: Pick<SyncContext, "store" | "metrics" | "crashPoint">,
  mirror: string,
  batch: (tx: StoreOps, first: boolean) => Promise<B>,
): Promise<Revocations & { last: B }> {
  const total: Revocations = { revoked: 0, deleted: 0 };
  for (let first = true; ; first = false) {
    await letTimersRun();
    const done = await store.transaction((tx) => batch(tx, first));
    countRevocations(metrics, mirror, done);
    total.revoked += done.revoked;
    total.deleted += done.deleted;
    if (done.last) return { ...total, last: done };
    crashPoint("between-revocations");
  }
}

/**
 * Resolves on a later turn of the event loop, after the timers already due. On SQLite every
 * statement runs synchronously, so transactions awaited one after another never let a timer run:
 * a sweep of 100k revocations held the lease's renewal (every third of the lease), the daemon's
 * heartbeat and its HTTP probes for as long as it lasted, and one longer than the lease lost it
 * and rolled back. A timer, not `setImmediate`: the timers phase may come after the check phase.
 */
export function letTimersRun(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** The counters of revocations that committed. */
export function countRevocations(metrics: Metrics, mirror: string, r: Revocations): void {
  metrics.accessRevoked.inc({ mirror }, r.revoked);
  metrics.resourcesDeleted.inc({ mirror }, r.deleted);
}
