/**
 * One row per mirror: what `status` shows.
 */
import { eq } from "drizzle-orm";
import { outcomeColumns } from "../outcome-columns.js";
import type { MirrorRepo } from "../store.js";
import type { Conn } from "./connection.js";
import { mirrorState } from "./schema.js";

export function createMirrorRepo({ db }: Conn): MirrorRepo {
  return {
    async ensure(mirror, syncConfigId) {
      await db
        .insert(mirrorState)
        .values({ mirror, syncConfigId })
        .onConflictDoUpdate({ target: mirrorState.mirror, set: { syncConfigId } });
    },

    async get(mirror) {
      const [row] = await db.select().from(mirrorState).where(eq(mirrorState.mirror, mirror));
      return row;
    },

    async recordOutcome(mirror, o) {
      await db.update(mirrorState).set(outcomeColumns(o)).where(eq(mirrorState.mirror, mirror));
    },
  };
}
