/**
 * One row per mirror: what `status` shows.
 */
import { eq } from "drizzle-orm";
import { approvalColumns, outcomeColumns } from "../outcome-columns.js";
import type { MirrorRepo } from "../store.js";
import type { Db } from "./open.js";
import { mirrorState } from "./schema.js";
import type { Sync } from "./sync-repo.js";

export function createMirrorRepo(db: Db): Sync<MirrorRepo> {
  return {
    ensure(mirror, syncConfigId) {
      db.insert(mirrorState)
        .values({ mirror, syncConfigId })
        .onConflictDoUpdate({ target: mirrorState.mirror, set: { syncConfigId } })
        .run();
    },

    get(mirror) {
      return db.select().from(mirrorState).where(eq(mirrorState.mirror, mirror)).get();
    },

    recordOutcome(mirror, o) {
      db.update(mirrorState).set(outcomeColumns(o)).where(eq(mirrorState.mirror, mirror)).run();
    },

    approveSweep(mirror, a) {
      const held = db.select().from(mirrorState).where(eq(mirrorState.mirror, mirror)).get()?.heldRevocations;
      if (!held) return null;
      db.update(mirrorState).set(approvalColumns(held, a)).where(eq(mirrorState.mirror, mirror)).run();
      return { upTo: held, ...a };
    },
  };
}
