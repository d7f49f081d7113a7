/**
 * After access rows are removed: a key nobody can see any more becomes a tombstone (`delete`),
 * otherwise only who may see it changed (`access`). Runs inside the caller's transaction.
 */
import type { StoreOps } from "../store/store.js";
import type { ChangeRecord } from "../store/types.js";
import type { SyncContext } from "./context.js";

export async function applyRevocations(
  ctx: SyncContext,
  tx: StoreOps,
  mirror: string,
  keys: readonly string[],
  scope: string,
): Promise<{ revoked: number; deleted: number }> {
  const { metrics } = ctx;
  const at = ctx.now().toISOString();
  const changes: ChangeRecord[] = [];
  for (const key of keys) {
    const state = await tx.resources.findState(key);
    if (state === undefined || state.deletedAt !== null) continue;
    if (await tx.access.hasAnyAccess(key)) {
      changes.push({ key, op: "access", at, mirror, scope });
    } else {
      await tx.resources.tombstone(key, at);
      changes.push({ key, op: "delete", at, mirror, scope });
    }
  }
  await tx.changes.recordAll(changes);
  const deleted = changes.filter((c) => c.op === "delete").length;
  metrics.accessRevoked.inc({ mirror }, keys.length);
  metrics.resourcesDeleted.inc({ mirror }, deleted);
  return { revoked: keys.length, deleted };
}
