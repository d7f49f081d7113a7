/**
 * What syncmirror knows of the sync configs it manages (docs/declared-sync-configs.md): one row per
 * declared mirror, in the database so every replica and every restart agrees on which remote
 * config is whose, and whether a mirror owes a full pass after its config changed.
 */
import type { SQL } from "drizzle-orm";

export type SyncConfigOrigin = "created" | "adopted";

export interface ManagedSyncConfig {
  mirror: string;
  /** Null until a create is known to have succeeded (or while only an error is recorded). */
  syncConfigId: string | null;
  projectId: string | null;
  /** The remote name last applied, or being created. */
  name: string | null;
  /** syncmirror created it, or `apply --adopt` took it over; null: nothing applied yet. */
  origin: SyncConfigOrigin | null;
  /** A create POST for `name` was sent then and its answer is not recorded: a config of that name is ours. */
  creatingAt: string | null;
  adoptedAt: string | null;
  /** The declaration last applied in full (`sync-configs/declaration-hash.ts`). */
  appliedHash: string | null;
  appliedAt: string | null;
  /**
   * The mirror owes a full pass: set to the newest trigger row id of the mirror when the settings
   * changed; a full trigger with a higher id that succeeds clears it.
   */
  fullPendingAfter: number | null;
  lastError: string | null;
  lastErrorAt: string | null;
  /** When the current run of apply errors began (cleared with the error by an apply). */
  firstErrorAt: string | null;
}

export interface SyncConfigRepo {
  find(mirror: string): Promise<ManagedSyncConfig | undefined>;
  list(): Promise<ManagedSyncConfig[]>;
  /** Written before a create POST, so that a config of that name found after a lost answer is known as ours. */
  recordCreating(mirror: string, c: { name: string; projectId: string; at: string }): Promise<void>;
  /**
   * The remote config matches the declaration. With `fullOwed` the mirror's next pass is a full
   * snapshot; without it, a full already owed stays owed. Clears the creating mark and the error.
   */
  recordApplied(
    mirror: string,
    c: {
      syncConfigId: string;
      projectId: string;
      name: string;
      origin: SyncConfigOrigin;
      adoptedAt: string | null;
      appliedHash: string;
      at: string;
      fullOwed: boolean;
    },
  ): Promise<void>;
  /**
   * The declaration could not be applied; what was applied before stays as it was. `createRefused`:
   * a create was answered with a refusal, so no config of its name is ours (the creating mark goes).
   */
  recordError(mirror: string, c: { error: string; at: string; createRefused: boolean }): Promise<void>;
  remove(mirror: string): Promise<void>;
  /** A full pass of trigger row `triggerRowId` succeeded: a full owed since before that trigger is paid. */
  fullSucceeded(mirror: string, triggerRowId: number): Promise<void>;
}

/**
 * The columns `recordApplied` writes, the same in both dialects: `newestTrigger` is the mirror's
 * newest trigger row id (`full-owed.ts`), the bound of a full owed from now on.
 */
export function appliedColumns(c: Parameters<SyncConfigRepo["recordApplied"]>[1], newestTrigger: SQL) {
  return {
    syncConfigId: c.syncConfigId,
    projectId: c.projectId,
    name: c.name,
    origin: c.origin,
    adoptedAt: c.adoptedAt,
    appliedHash: c.appliedHash,
    appliedAt: c.at,
    creatingAt: null,
    lastError: null,
    lastErrorAt: null,
    firstErrorAt: null,
    ...(c.fullOwed ? { fullPendingAfter: newestTrigger } : {}),
  };
}
