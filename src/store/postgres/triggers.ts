/**
 * Triggers, from intent to settled; rows are mapped to `Trigger` here.
 */
import { and, asc, desc, eq, inArray, isNotNull, max, sql } from "drizzle-orm";
import { found, keepJson, toTrigger as mapTrigger } from "../rows.js";
import type { TriggerRepo } from "../store.js";
import type { ActiveTrigger, Trigger } from "../types.js";
import type { Conn } from "./connection.js";
import { triggers } from "./schema.js";

type TriggerRow = typeof triggers.$inferSelect;

const toTrigger = (row: TriggerRow): Trigger => mapTrigger(row, keepJson);

export function createTriggerRepo({ db }: Conn): TriggerRepo {
  const get = async (id: number): Promise<Trigger> => {
    const [row] = await db.select().from(triggers).where(eq(triggers.id, id));
    return toTrigger(found(row, `trigger row ${id}`));
  };
  const first = async (mirror: string, inFlight: boolean, answered = false): Promise<Trigger | undefined> => {
    const [row] = await db
      .select()
      .from(triggers)
      .where(
        and(
          eq(triggers.mirror, mirror),
          inFlight ? inArray(triggers.state, ["intent", "active"]) : eq(triggers.state, "done"),
          answered ? isNotNull(triggers.skipped) : undefined,
        ),
      )
      .orderBy(inFlight ? asc(triggers.id) : desc(triggers.id))
      .limit(1);
    return row && toTrigger(row);
  };
  return {
    findInFlight: (mirror) => first(mirror, true),

    get,

    lastFinished: (mirror, options = {}) => first(mirror, false, options.answered),

    async lastIntentAt(mirror, modes) {
      const [row] = await db
        .select({ at: max(triggers.intentAt) })
        .from(triggers)
        .where(and(eq(triggers.mirror, mirror), inArray(triggers.mode, [...modes])));
      return row?.at ?? undefined;
    },

    async createIntent(t) {
      const [row] = await db
        .insert(triggers)
        .values({ ...t, state: "intent" })
        .returning();
      return toTrigger(row as TriggerRow);
    },

    async activate(id, t) {
      const [row] = await db
        .update(triggers)
        .set({
          state: "active",
          triggerId: t.triggerId,
          skipped: t.skipped,
          skippedCount: t.skippedCount,
          adopted: t.adopted,
          startedAt: t.startedAt,
        })
        .where(eq(triggers.id, id))
        .returning();
      return toTrigger(found(row, `trigger row ${id}`)) as ActiveTrigger;
    },

    async setMassDeleteAllowed(id, allow) {
      await db.update(triggers).set({ allowMassDelete: allow }).where(eq(triggers.id, id));
    },

    async addSweepCounts(id, c) {
      await db
        .update(triggers)
        .set({
          deleted: sql`${triggers.deleted} + ${c.deleted ?? 0}`,
          revoked: sql`${triggers.revoked} + ${c.revoked ?? 0}`,
          sweepsHeld: sql`${triggers.sweepsHeld} + ${c.sweepsHeld ?? 0}`,
        })
        .where(eq(triggers.id, id));
    },

    async setHeldKeys(id, keys) {
      await db.update(triggers).set({ held: keys }).where(eq(triggers.id, id));
    },

    async markLeaversSwept(id, leaversUnknown) {
      await db.update(triggers).set({ leaversSwept: true, leaversUnknown }).where(eq(triggers.id, id));
    },

    async finish(id, f) {
      await db
        .update(triggers)
        .set({
          state: "done",
          outcome: f.outcome,
          message: f.message,
          summary: f.summary ?? null,
          finishedAt: f.finishedAt,
        })
        .where(eq(triggers.id, id));
    },
  };
}
