/**
 * The public `changes` feed: a consumer keeps the last `seq` it processed and reads onward.
 */
import { and, eq, sql } from "drizzle-orm";
import type { Db } from "./db.js";
import { changes } from "./schema.js";

export type ChangeOp = "upsert" | "delete" | "access";

const p = (name: string) => sql.placeholder(name);

export function createChangeStore(db: Db) {
  const exists = db
    .select({ one: sql<number>`1` })
    .from(changes)
    .where(and(eq(changes.syncId, p("scope")), eq(changes.key, p("key"))))
    .limit(1)
    .prepare();
  const insert = db
    .insert(changes)
    .values({ key: p("key"), op: p("op"), at: p("at"), mirror: p("mirror"), syncId: p("scope") })
    .prepare();

  return {
    /**
     * Appends a change unless the key already changed within `scope` (a run's sync_id, or a
     * sweep's id): at most one change per key per run ingested.
     */
    record(c: { key: string; op: ChangeOp; at: string; mirror: string; scope: string }): boolean {
      if (exists.get(c) !== undefined) return false;
      insert.run(c);
      return true;
    },
  };
}

export type ChangeStore = ReturnType<typeof createChangeStore>;
