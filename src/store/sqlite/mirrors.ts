/**
 * One row per mirror: what `status` shows.
 */
import { and, eq, lt } from "drizzle-orm";
import { ensureColumns } from "../full-owed.js";
import { outcomeColumns } from "../outcome-columns.js";
import * as retiredSql from "../retired-mirrors.js";
import type { MirrorRepo } from "../store.js";
import type { Db } from "./open.js";
import { mirrorState } from "./schema.js";
import type { Sync } from "./sync-repo.js";

export function createMirrorRepo(db: Db): Sync<MirrorRepo> {
  return {
    ensure(mirror, syncConfigId) {
      return db
        .insert(mirrorState)
        .values({ mirror, syncConfigId })
        .onConflictDoUpdate({
          target: mirrorState.mirror,
          set: ensureColumns(mirror, syncConfigId, mirrorState),
        })
        .returning()
        .get();
    },

    fullSucceeded(mirror, triggerRowId) {
      db.update(mirrorState)
        .set({ fullPendingAfter: null })
        .where(and(eq(mirrorState.mirror, mirror), lt(mirrorState.fullPendingAfter, triggerRowId)))
        .run();
    },

    get(mirror) {
      return db.select().from(mirrorState).where(eq(mirrorState.mirror, mirror)).get();
    },

    recordOutcome(mirror, o) {
      db.update(mirrorState).set(outcomeColumns(o)).where(eq(mirrorState.mirror, mirror)).run();
    },

    retired(configured) {
      const names = retiredSql.retiredNames(db.all<{ mirror: string }>(retiredSql.MIRROR_NAMES), configured);
      if (names.length === 0) return [];
      return retiredSql.withCounts(
        names,
        db.all<{ mirror: string; users: number; keys: number }>(retiredSql.countGranted(names)),
      );
    },

    known(mirror) {
      return db.all(retiredSql.knownMirror(mirror)).length > 0;
    },

    forget(mirror) {
      for (const statement of retiredSql.forgetStatements(mirror)) db.run(statement);
    },
  };
}
