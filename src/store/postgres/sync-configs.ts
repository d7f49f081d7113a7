/** The sync configs syncmirror manages for declared mirrors (`../managed-sync-configs.ts`), on PostgreSQL. */
import { and, eq, lt, sql } from "drizzle-orm";
import type { PgInsertValue } from "drizzle-orm/pg-core";
import { newestTriggerRow } from "../full-owed.js";
import { appliedColumns, type ManagedSyncConfig, type SyncConfigRepo } from "../managed-sync-configs.js";
import type { Conn } from "./connection.js";
import { managedSyncConfigs as t } from "./schema.js";

export function createSyncConfigRepo({ db }: Conn): SyncConfigRepo {
  type Values = Omit<PgInsertValue<typeof t>, "mirror">;
  /** `inserted`: values a new row takes instead of `set`'s (which may read the row it updates). */
  const upsert = async (mirror: string, set: Values, inserted: Values = {}) => {
    await db
      .insert(t)
      .values({ mirror, ...set, ...inserted })
      .onConflictDoUpdate({ target: t.mirror, set });
  };
  return {
    async find(mirror) {
      const [row] = await db.select().from(t).where(eq(t.mirror, mirror));
      return row as ManagedSyncConfig | undefined;
    },

    async list() {
      return (await db.select().from(t).orderBy(t.mirror)) as ManagedSyncConfig[];
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

    async remove(mirror) {
      await db.delete(t).where(eq(t.mirror, mirror));
    },

    async fullSucceeded(mirror, triggerRowId) {
      await db
        .update(t)
        .set({ fullPendingAfter: null })
        .where(and(eq(t.mirror, mirror), lt(t.fullPendingAfter, triggerRowId)));
    },
  };
}
