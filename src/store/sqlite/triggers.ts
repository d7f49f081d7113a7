/**
 * Triggers, from intent to settled; rows are mapped to `Trigger` here, the skipped list parsed once.
 */
import { and, asc, desc, eq, inArray, isNotNull, max } from "drizzle-orm";
import { p } from "../placeholders.js";
import { found, toTrigger as mapTrigger, parseJsonText } from "../rows.js";
import type { TriggerRepo } from "../store.js";
import type { ActiveTrigger, Trigger } from "../types.js";
import type { Db } from "./open.js";
import { triggers } from "./schema.js";
import { plus, type Sync } from "./sync-repo.js";

type TriggerRow = typeof triggers.$inferSelect;

const toTrigger = (row: TriggerRow): Trigger => mapTrigger(row, parseJsonText);

export function createTriggerRepo(db: Db): Sync<TriggerRepo> {
  const get = (id: number): Trigger => {
    return toTrigger(found(db.select().from(triggers).where(eq(triggers.id, id)).get(), `trigger row ${id}`));
  };
  // Each source's sweep adds its counts: prepared once.
  const addSweep = db
    .update(triggers)
    .set({
      deleted: plus(triggers.deleted, "deleted"),
      revoked: plus(triggers.revoked, "revoked"),
      sweepsHeld: plus(triggers.sweepsHeld, "sweepsHeld"),
    })
    .where(eq(triggers.id, p("id")))
    .prepare();
  return {
    findInFlight(mirror) {
      const row = db
        .select()
        .from(triggers)
        .where(and(eq(triggers.mirror, mirror), inArray(triggers.state, ["intent", "active"])))
        .orderBy(asc(triggers.id))
        .get();
      return row && toTrigger(row);
    },

    get,

    lastFinished(mirror, options = {}) {
      const row = db
        .select()
        .from(triggers)
        .where(
          and(
            eq(triggers.mirror, mirror),
            eq(triggers.state, "done"),
            options.answered ? isNotNull(triggers.skipped) : undefined,
          ),
        )
        .orderBy(desc(triggers.id))
        .get();
      return row && toTrigger(row);
    },

    lastIntentAt(mirror, modes) {
      const row = db
        .select({ at: max(triggers.intentAt) })
        .from(triggers)
        .where(and(eq(triggers.mirror, mirror), inArray(triggers.mode, [...modes])))
        .get();
      return row?.at ?? undefined;
    },

    createIntent(t) {
      return toTrigger(
        db
          .insert(triggers)
          .values({ ...t, state: "intent" })
          .returning()
          .get(),
      );
    },

    activate(id, t) {
      db.update(triggers)
        .set({
          state: "active",
          triggerId: t.triggerId,
          skipped: t.skipped === null ? null : JSON.stringify(t.skipped),
          skippedCount: t.skippedCount,
          adopted: t.adopted,
          startedAt: t.startedAt,
        })
        .where(eq(triggers.id, id))
        .run();
      return get(id) as ActiveTrigger;
    },

    setMassDeleteAllowed(id, allow) {
      db.update(triggers).set({ allowMassDelete: allow }).where(eq(triggers.id, id)).run();
    },

    addSweepCounts(id, c) {
      addSweep.run({
        id,
        deleted: c.deleted ?? 0,
        revoked: c.revoked ?? 0,
        sweepsHeld: c.sweepsHeld ?? 0,
      });
    },

    setHeldKeys(id, keys) {
      db.update(triggers).set({ held: keys }).where(eq(triggers.id, id)).run();
    },

    markLeaversSwept(id, leaversUnknown) {
      db.update(triggers).set({ leaversSwept: true, leaversUnknown }).where(eq(triggers.id, id)).run();
    },

    finish(id, f) {
      db.update(triggers)
        .set({
          state: "done",
          outcome: f.outcome,
          message: f.message,
          summary: JSON.stringify(f.summary),
          finishedAt: f.finishedAt,
        })
        .where(eq(triggers.id, id))
        .run();
    },
  };
}
