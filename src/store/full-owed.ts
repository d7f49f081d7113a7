/**
 * A full pass owed by a mirror, the same in both dialects: by a declared config applied with
 * changes (`managed-sync-configs.ts`), or by `sync_config_id` naming another config than the one
 * the mirror's state was collected from (`MirrorRepo.ensure`). Either is the mirror's newest
 * trigger row id when it became owed; a full trigger with a higher id that succeeds pays it.
 */
import { type AnyColumn, type SQL, sql } from "drizzle-orm";

/** Triggers created after this one owe nothing; the bound is a row id, so no clock is compared. */
export function newestTriggerRow(mirror: string): SQL {
  return sql`(SELECT coalesce(max(id), 0) FROM triggers WHERE mirror = ${mirror})`;
}

/**
 * What `ensure` sets on a mirror's existing row: the id, and a full owed when it names another
 * config than the row's (a full already owed stays owed).
 */
export function ensureColumns(
  mirror: string,
  syncConfigId: string,
  row: { syncConfigId: AnyColumn; fullPendingAfter: AnyColumn },
): { syncConfigId: string; fullPendingAfter: SQL } {
  return {
    syncConfigId,
    fullPendingAfter: sql`CASE WHEN ${row.syncConfigId} = ${syncConfigId} THEN ${row.fullPendingAfter} ELSE ${newestTriggerRow(mirror)} END`,
  };
}
