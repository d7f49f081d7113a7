/**
 * After access rows are removed: a key nobody can see any more becomes a tombstone (`delete`),
 * otherwise only who may see it changed (`access`). Runs inside the caller's transaction.
 */
import type { SyncContext } from "./context.js";

export function applyRevocations(
  ctx: SyncContext,
  mirror: string,
  keys: readonly string[],
  scope: string,
): { revoked: number; deleted: number } {
  const { store, metrics } = ctx;
  const at = ctx.now().toISOString();
  let deleted = 0;
  for (const key of keys) {
    const state = store.resources.findState(key);
    if (state === undefined || state.deletedAt !== null) continue;
    if (store.access.hasAnyAccess(key)) {
      store.changes.record({ key, op: "access", at, mirror, scope });
    } else {
      store.resources.tombstone(key, at);
      store.changes.record({ key, op: "delete", at, mirror, scope });
      deleted++;
    }
  }
  metrics.accessRevoked.inc({ mirror }, keys.length);
  metrics.resourcesDeleted.inc({ mirror }, deleted);
  return { revoked: keys.length, deleted };
}
