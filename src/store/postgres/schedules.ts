/**
 * Mirrors' schedules shared by replicas. A schedule is read `FOR UPDATE` inside the transaction that
 * applies a rule to it, so two replicas recording the same scheduled time, or a tick racing a
 * pass's intent, take turns.
 */
import { eq } from "drizzle-orm";
import { scheduleColumns, toSchedule } from "../rows.js";
import type { ScheduleRepo } from "../store.js";
import type { Conn } from "./connection.js";
import { schedules } from "./schema.js";

export function createScheduleRepo({ db }: Conn): ScheduleRepo {
  return {
    async find(mirror) {
      const [row] = await db.select().from(schedules).where(eq(schedules.mirror, mirror));
      return row && toSchedule(row);
    },
    async lock(mirror) {
      const [row] = await db.select().from(schedules).where(eq(schedules.mirror, mirror)).for("update");
      return row && toSchedule(row);
    },
    async list() {
      return (await db.select().from(schedules).orderBy(schedules.mirror)).map(toSchedule);
    },
    async save(schedule) {
      const { mirror: _mirror, ...set } = scheduleColumns(schedule);
      await db
        .insert(schedules)
        .values(scheduleColumns(schedule))
        .onConflictDoUpdate({ target: schedules.mirror, set });
    },
  };
}
