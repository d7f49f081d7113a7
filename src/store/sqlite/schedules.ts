/**
 * Mirrors' schedules on SQLite. One process holds the writer lock and runs the schedule (the CLI's
 * controls write beside it, one short transaction each), so the rules and their transactions are
 * those of PostgreSQL with one process.
 */
import { eq } from "drizzle-orm";
import { scheduleColumns, toSchedule } from "../rows.js";
import type { ScheduleRepo } from "../store.js";
import type { Db } from "./open.js";
import { schedules } from "./schema.js";
import type { Sync } from "./sync-repo.js";

export function createScheduleRepo(db: Db): Sync<ScheduleRepo> {
  // BEGIN IMMEDIATE already holds the writer lock: a plain read is locked for the transaction.
  const find = (mirror: string) => {
    const row = db.select().from(schedules).where(eq(schedules.mirror, mirror)).get();
    return row && toSchedule(row);
  };
  return {
    find,
    lock: find,
    list() {
      return db.select().from(schedules).orderBy(schedules.mirror).all().map(toSchedule);
    },
    save(schedule) {
      const { mirror: _mirror, ...set } = scheduleColumns(schedule);
      db.insert(schedules)
        .values(scheduleColumns(schedule))
        .onConflictDoUpdate({ target: schedules.mirror, set })
        .run();
    },
  };
}
