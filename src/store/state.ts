/**
 * Internal state that must survive a restart: triggers (from intent to settled), their runs with
 * export checkpoints, each run's sources, and the per-mirror summary `status` shows.
 */
import { and, asc, desc, eq, getTableColumns, inArray, max, sql } from "drizzle-orm";
import type { Db } from "./db.js";
import { mirrorState, runSources, runs, triggers } from "./schema.js";

export type TriggerRow = typeof triggers.$inferSelect;
export type RunRow = typeof runs.$inferSelect;
export type RunSourceRow = typeof runSources.$inferSelect;
export type MirrorStateRow = typeof mirrorState.$inferSelect;
export type Mode = "incremental" | "full";

export interface NewRun {
  syncId: string;
  userEmail: string;
  status: string;
  createdAt: string | null;
}

export interface SourceReport {
  source: string;
  sourceType: string;
  serverInstanceId: string;
  taskStatus: string;
  exportStatus: string | null;
  counts: unknown;
}

export function createStateStore(db: Db) {
  // `runsOf` runs on every wake of the wait loop, once per finished export, so a 500-run trigger
  // reads its runs ~1,000 times: one prepared statement with the columns aliased to RunRow's
  // fields, rather than drizzle building and mapping the query on each call.
  const runFields = Object.entries(getTableColumns(runs)).map(([field, c]) => `${c.name} AS ${field}`);
  const runsOfTrigger = db.$client.prepare<[number], RunRow>(
    `SELECT ${runFields.join(", ")} FROM runs WHERE trigger_row_id = ? ORDER BY sync_id`,
  );
  return {
    findInFlight(mirror: string): TriggerRow | undefined {
      return db
        .select()
        .from(triggers)
        .where(and(eq(triggers.mirror, mirror), inArray(triggers.state, ["intent", "active"])))
        .orderBy(asc(triggers.id))
        .get();
    },

    getTrigger(id: number): TriggerRow {
      const row = db.select().from(triggers).where(eq(triggers.id, id)).get();
      if (!row) throw new Error(`trigger row ${id} vanished from the database`);
      return row;
    },

    lastFinished(mirror: string): TriggerRow | undefined {
      return db
        .select()
        .from(triggers)
        .where(and(eq(triggers.mirror, mirror), eq(triggers.state, "done")))
        .orderBy(desc(triggers.id))
        .get();
    },

    /** Written before the POST so that a crash between the two leaves something to adopt from. */
    createIntent(t: {
      mirror: string;
      mode: Mode;
      since: string | null;
      knownBefore: string | null;
      intentAt: string;
      allowMassDelete: boolean;
    }): TriggerRow {
      return db
        .insert(triggers)
        .values({ ...t, state: "intent" })
        .returning()
        .get();
    },

    /** The trigger's runs are known (from the POST response or adopted from the run list). */
    activate(
      id: number,
      t: {
        triggerId: string;
        skipped: unknown[] | null;
        skippedCount: number;
        adopted: boolean;
        startedAt: string;
      },
      newRuns: NewRun[],
      mirror: string,
    ): void {
      db.transaction((tx) => {
        tx.update(triggers)
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
        for (const r of newRuns) {
          tx.insert(runs)
            .values({ ...r, triggerRowId: id, mirror })
            .onConflictDoNothing()
            .run();
        }
      });
    },

    setMassDeleteAllowed(id: number, allow: boolean): void {
      db.update(triggers).set({ allowMassDelete: allow }).where(eq(triggers.id, id)).run();
    },

    addSweepCounts(
      id: number,
      c: { deleted?: number; revoked?: number; held?: number; sweepsHeld?: number },
    ): void {
      db.update(triggers)
        .set({
          deleted: sql`${triggers.deleted} + ${c.deleted ?? 0}`,
          revoked: sql`${triggers.revoked} + ${c.revoked ?? 0}`,
          held: sql`${triggers.held} + ${c.held ?? 0}`,
          sweepsHeld: sql`${triggers.sweepsHeld} + ${c.sweepsHeld ?? 0}`,
        })
        .where(eq(triggers.id, id))
        .run();
    },

    markLeaversSwept(id: number, leaversUnknown: boolean): void {
      db.update(triggers).set({ leaversSwept: true, leaversUnknown }).where(eq(triggers.id, id)).run();
    },

    finish(id: number, f: { outcome: string; message: string; summary: unknown; finishedAt: string }): void {
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

    /** Newest server `created_at` among the mirror's known runs: adoption only takes runs after it. */
    newestRunCreatedAt(mirror: string): string | null {
      return (
        db
          .select({ v: max(runs.createdAt) })
          .from(runs)
          .where(eq(runs.mirror, mirror))
          .get()?.v ?? null
      );
    },

    isKnownRun(syncId: string): boolean {
      return db.select({ s: runs.syncId }).from(runs).where(eq(runs.syncId, syncId)).get() !== undefined;
    },

    insertRuns(triggerRowId: number, mirror: string, newRuns: NewRun[]): void {
      for (const r of newRuns) {
        db.insert(runs)
          .values({ ...r, triggerRowId, mirror })
          .onConflictDoNothing()
          .run();
      }
    },

    runsOf(triggerRowId: number): RunRow[] {
      return runsOfTrigger.all(triggerRowId);
    },

    getRun(syncId: string): RunRow {
      const row = db.select().from(runs).where(eq(runs.syncId, syncId)).get();
      if (!row) throw new Error(`run ${syncId} vanished from the database`);
      return row;
    },

    updateRunStatus(syncId: string, status: string, createdAt: string | null): void {
      db.update(runs)
        .set({ status, ...(createdAt ? { createdAt } : {}) })
        .where(eq(runs.syncId, syncId))
        .run();
    },

    setIngest(syncId: string, ingest: RunRow["ingest"], error: string | null = null): void {
      db.update(runs).set({ ingest, error }).where(eq(runs.syncId, syncId)).run();
    },

    /**
     * Counted before the POST, with what the sources looked like (`pending`), so a crash or a lost
     * answer in between is settled by reading the run: never one continue too many, nor one too few.
     */
    countContinue(syncId: string, pending: string): void {
      db.update(runs)
        .set({ continuesSent: sql`${runs.continuesSent} + 1`, continuePending: pending })
        .where(eq(runs.syncId, syncId))
        .run();
    },

    /** The continue was answered (or is known to have arrived): nothing is pending. */
    clearContinuePending(syncId: string): void {
      db.update(runs).set({ continuePending: null }).where(eq(runs.syncId, syncId)).run();
    },

    saveFirstPage(
      syncId: string,
      p: {
        schemaVersion: string;
        engineVersion: string | null;
        diagnostics: unknown;
        sources: SourceReport[];
      },
    ): void {
      db.update(runs)
        .set({
          schemaVersion: p.schemaVersion,
          engineVersion: p.engineVersion,
          diagnostics: JSON.stringify(p.diagnostics),
        })
        .where(eq(runs.syncId, syncId))
        .run();
      for (const s of p.sources) {
        const values = { ...s, counts: JSON.stringify(s.counts ?? null) };
        db.insert(runSources)
          .values({ syncId, ...values })
          .onConflictDoUpdate({ target: [runSources.syncId, runSources.source], set: values })
          .run();
      }
    },

    /** The checkpoint: written in the same transaction as the page it follows. */
    checkpoint(
      syncId: string,
      nextOffset: number | null,
      c: { upserted: number; unchanged: number; rejected: number },
    ): void {
      db.update(runs)
        .set({
          nextOffset,
          upserted: sql`${runs.upserted} + ${c.upserted}`,
          unchanged: sql`${runs.unchanged} + ${c.unchanged}`,
          rejected: sql`${runs.rejected} + ${c.rejected}`,
          ...(nextOffset === null ? { ingest: "done" as const } : { ingest: "ingesting" as const }),
        })
        .where(eq(runs.syncId, syncId))
        .run();
    },

    sourcesOf(syncId: string): RunSourceRow[] {
      return db.select().from(runSources).where(eq(runSources.syncId, syncId)).all();
    },

    markSwept(syncId: string, source: string, swept: "applied" | "held"): void {
      db.update(runSources)
        .set({ swept })
        .where(and(eq(runSources.syncId, syncId), eq(runSources.source, source)))
        .run();
    },

    ensureMirror(mirror: string, syncConfigId: string): void {
      db.insert(mirrorState)
        .values({ mirror, syncConfigId })
        .onConflictDoUpdate({ target: mirrorState.mirror, set: { syncConfigId } })
        .run();
    },

    getMirror(mirror: string): MirrorStateRow | undefined {
      return db.select().from(mirrorState).where(eq(mirrorState.mirror, mirror)).get();
    },

    recordOutcome(
      mirror: string,
      o: { mode: Mode; outcome: string; message: string; at: string; heldRevocations?: number },
    ): void {
      const success = o.outcome === "succeeded";
      db.update(mirrorState)
        .set({
          lastOutcome: o.outcome,
          lastOutcomeAt: o.at,
          lastMessage: o.message,
          ...(success && o.mode === "full" ? { lastFullSuccessAt: o.at } : {}),
          ...(success && o.mode === "incremental" ? { lastIncrementalSuccessAt: o.at } : {}),
          ...(o.heldRevocations !== undefined ? { heldRevocations: o.heldRevocations } : {}),
        })
        .where(eq(mirrorState.mirror, mirror))
        .run();
    },
  };
}

export type StateStore = ReturnType<typeof createStateStore>;
