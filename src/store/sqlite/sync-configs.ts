/** The sync configs syncmirror manages for declared mirrors (`../managed-sync-configs.ts`), on SQLite. */
import { and, eq, lt, sql } from "drizzle-orm";
import type { SQLiteInsertValue, SQLiteUpdateSetSource } from "drizzle-orm/sqlite-core";
import { newestTriggerRow } from "../full-owed.js";
import { appliedColumns, type ManagedSyncConfig, type SyncConfigRepo } from "../managed-sync-configs.js";
import type { Db } from "./open.js";
import { managedSyncConfigs as t } from "./schema.js";
import type { Sync } from "./sync-repo.js";

export function createSyncConfigRepo(db: Db): Sync<SyncConfigRepo> {
  /** `inserted`: values a new row takes instead of `set`'s (which may read the row it updates). */
  const upsert = (
    mirror: string,
    set: SQLiteUpdateSetSource<typeof t>,
    inserted: SQLiteUpdateSetSource<typeof t> = {},
  ) => {
    db.insert(t)
      .values({ mirror, ...set, ...inserted } as SQLiteInsertValue<typeof t>)
      .onConflictDoUpdate({ target: t.mirror, set })
      .run();
  };
  return {
    find(mirror) {
      return db.select().from(t).where(eq(t.mirror, mirror)).get() as ManagedSyncConfig | undefined;
    },

    list() {
      return db.select().from(t).orderBy(t.mirror).all() as ManagedSyncConfig[];
    },

    recordCreating: (mirror, c) => upsert(mirror, { name: c.name, projectId: c.projectId, creatingAt: c.at }),

    recordApplied: (mirror, c) => upsert(mirror, appliedColumns(c, newestTriggerRow(mirror))),

    // The first error of a run of them stays the problem's first sighting.
    recordError: (mirror, c) =>
      upsert(
        mirror,
        {
          lastError: c.error,
          lastErrorAt: c.at,
          firstErrorAt: sql`coalesce(${t.firstErrorAt}, ${c.at})`,
          ...(c.createRefused ? { creatingAt: null } : {}),
        },
        { firstErrorAt: c.at },
      ),

    remove(mirror) {
      db.delete(t).where(eq(t.mirror, mirror)).run();
    },

    fullSucceeded(mirror, triggerRowId) {
      db.update(t)
        .set({ fullPendingAfter: null })
        .where(and(eq(t.mirror, mirror), lt(t.fullPendingAfter, triggerRowId)))
        .run();
    },
  };
}
