/** Operators' controls (pause, resume, trigger) on SQLite, kept for the history. */
import { desc, eq } from "drizzle-orm";
import { toControl } from "../rows.js";
import type { ControlRepo } from "../store.js";
import type { Db } from "./open.js";
import { controlActions } from "./schema.js";
import type { Sync } from "./sync-repo.js";

export function createControlRepo(db: Db): Sync<ControlRepo> {
  return {
    record(c) {
      db.insert(controlActions).values(c).run();
    },
    list({ mirror, limit }) {
      return db
        .select()
        .from(controlActions)
        .where(mirror === undefined ? undefined : eq(controlActions.mirror, mirror))
        .orderBy(desc(controlActions.id))
        .limit(limit)
        .all()
        .map(toControl);
    },
  };
}
