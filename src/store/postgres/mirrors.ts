/**
 * One row per mirror: what `status` shows.
 */
import { and, eq, lt } from "drizzle-orm";
import { ensureColumns } from "../full-owed.js";
import { outcomeColumns } from "../outcome-columns.js";
import * as retiredSql from "../retired-mirrors.js";
import type { MirrorRepo } from "../store.js";
import type { MirrorState } from "../types.js";
import type { Conn } from "./connection.js";
import { mirrorState } from "./schema.js";

export function createMirrorRepo({ db }: Conn): MirrorRepo {
  return {
    async ensure(mirror, syncConfigId) {
      const [row] = await db
        .insert(mirrorState)
        .values({ mirror, syncConfigId })
        .onConflictDoUpdate({
          target: mirrorState.mirror,
          set: ensureColumns(mirror, syncConfigId, mirrorState),
        })
        .returning();
      return row as MirrorState;
    },

    async fullSucceeded(mirror, triggerRowId) {
      await db
        .update(mirrorState)
        .set({ fullPendingAfter: null })
        .where(and(eq(mirrorState.mirror, mirror), lt(mirrorState.fullPendingAfter, triggerRowId)));
    },

    async get(mirror) {
      const [row] = await db.select().from(mirrorState).where(eq(mirrorState.mirror, mirror));
      return row;
    },

    async recordOutcome(mirror, o) {
      await db.update(mirrorState).set(outcomeColumns(o)).where(eq(mirrorState.mirror, mirror));
    },

    async retired(configured) {
      const names = retiredSql.retiredNames(
        (await db.execute<{ mirror: string }>(retiredSql.MIRROR_NAMES)).rows,
        configured,
      );
      if (names.length === 0) return [];
      const counts = await db.execute<{ mirror: string; users: string; keys: string }>(
        retiredSql.countGranted(names),
      );
      return retiredSql.withCounts(names, counts.rows);
    },

    async known(mirror) {
      return (await db.execute(retiredSql.knownMirror(mirror))).rows.length > 0;
    },

    async forget(mirror) {
      for (const statement of retiredSql.forgetStatements(mirror)) await db.execute(statement);
    },
  };
}
