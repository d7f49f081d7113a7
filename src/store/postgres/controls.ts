/** Operators' controls (pause, resume, trigger), kept for the history. */
import { desc, eq } from "drizzle-orm";
import { toControl } from "../rows.js";
import type { ControlRepo } from "../store.js";
import type { Conn } from "./connection.js";
import { controlActions } from "./schema.js";

export function createControlRepo({ db }: Conn): ControlRepo {
  return {
    async record(c) {
      await db.insert(controlActions).values(c);
    },
    async list({ mirror, limit }) {
      const rows = await db
        .select()
        .from(controlActions)
        .where(mirror === undefined ? undefined : eq(controlActions.mirror, mirror))
        .orderBy(desc(controlActions.id))
        .limit(limit);
      return rows.map(toControl);
    },
  };
}
