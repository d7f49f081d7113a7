/** Whether a mirror owes a full pass whatever scheduled it (`../store/full-owed.ts`), and why. */
import type { ManagedSyncConfig } from "../store/managed-sync-configs.js";
import type { MirrorState } from "../store/types.js";

/**
 * Why the mirror's next pass is full, or null. `state` as `ensure` left it, or as read before it
 * (`status`), with `syncConfigId` the id the config names now: a row naming another config is a
 * change `ensure` has yet to record.
 */
export function fullOwedBecause(
  state: MirrorState | undefined,
  record: ManagedSyncConfig | undefined,
  syncConfigId: string | null = state?.syncConfigId ?? null,
): string | null {
  if (
    state &&
    (state.fullPendingAfter !== null || (syncConfigId !== null && state.syncConfigId !== syncConfigId))
  )
    return "sync_config_id changed";
  if (record?.fullPendingAfter != null) return "the sync config changed";
  return null;
}
