/**
 * A trigger's runs with their export checkpoints, and each run's sources.
 */
import { and, eq, getTableColumns, max, sql } from "drizzle-orm";
import type { RunRepo } from "../store.js";
import type { PendingContinue, Run } from "../types.js";
import type { Db } from "./open.js";
import { runSources, runs } from "./schema.js";
import type { Sync } from "./sync-repo.js";

type RunRow = typeof runs.$inferSelect;

function toRun(row: RunRow): Run {
  const { diagnostics: _diagnostics, continuePending, ...rest } = row;
  return {
    ...rest,
    continuePending: continuePending === null ? null : (JSON.parse(continuePending) as PendingContinue),
  };
}

export function createRunRepo(db: Db): Sync<RunRepo> {
  // `ofTrigger` runs on every wake of the wait loop, once per finished export, so a 500-run
  // trigger reads its runs ~1,000 times: one prepared statement with the columns aliased to the
  // row's fields, rather than drizzle building and mapping the query on each call.
  const runFields = Object.entries(getTableColumns(runs)).map(([field, c]) => `${c.name} AS ${field}`);
  const runsOfTrigger = db.$client.prepare<[number], RunRow>(
    `SELECT ${runFields.join(", ")} FROM runs WHERE trigger_row_id = ? ORDER BY sync_id`,
  );
  return {
    newestCreatedAt(mirror) {
      return (
        db
          .select({ v: max(runs.createdAt) })
          .from(runs)
          .where(eq(runs.mirror, mirror))
          .get()?.v ?? null
      );
    },

    isKnown(syncId) {
      return db.select({ s: runs.syncId }).from(runs).where(eq(runs.syncId, syncId)).get() !== undefined;
    },

    insertMany(triggerRowId, mirror, newRuns) {
      for (const r of newRuns) {
        db.insert(runs)
          .values({ ...r, triggerRowId, mirror })
          .onConflictDoNothing()
          .run();
      }
    },

    ofTrigger(triggerRowId) {
      return runsOfTrigger.all(triggerRowId).map(toRun);
    },

    get(syncId) {
      const row = db.select().from(runs).where(eq(runs.syncId, syncId)).get();
      if (!row) throw new Error(`run ${syncId} vanished from the database`);
      return toRun(row);
    },

    updateStatus(syncId, status, createdAt) {
      db.update(runs)
        .set({ status, ...(createdAt ? { createdAt } : {}) })
        .where(eq(runs.syncId, syncId))
        .run();
    },

    setIngest(syncId, ingest, error = null) {
      db.update(runs).set({ ingest, error }).where(eq(runs.syncId, syncId)).run();
    },

    countContinue(syncId, pending) {
      db.update(runs)
        .set({ continuesSent: sql`${runs.continuesSent} + 1`, continuePending: JSON.stringify(pending) })
        .where(eq(runs.syncId, syncId))
        .run();
    },

    clearContinuePending(syncId) {
      db.update(runs).set({ continuePending: null }).where(eq(runs.syncId, syncId)).run();
    },

    saveFirstPage(syncId, p) {
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

    checkpoint(syncId, nextOffset, c) {
      db.update(runs)
        .set({
          nextOffset,
          upserted: sql`${runs.upserted} + ${c.upserted}`,
          unchanged: sql`${runs.unchanged} + ${c.unchanged}`,
          rejected: sql`${runs.rejected} + ${c.rejected}`,
          keysNew: sql`${runs.keysNew} + ${c.keysNew}`,
          keysChanged: sql`${runs.keysChanged} + ${c.keysChanged}`,
          ...(nextOffset === null ? { ingest: "done" as const } : { ingest: "ingesting" as const }),
        })
        .where(eq(runs.syncId, syncId))
        .run();
    },

    sourcesOf(syncId) {
      return db
        .select({
          syncId: runSources.syncId,
          source: runSources.source,
          sourceType: runSources.sourceType,
          serverInstanceId: runSources.serverInstanceId,
          taskStatus: runSources.taskStatus,
          exportStatus: runSources.exportStatus,
          swept: runSources.swept,
        })
        .from(runSources)
        .where(eq(runSources.syncId, syncId))
        .all();
    },

    markSwept(syncId, source, swept) {
      db.update(runSources)
        .set({ swept })
        .where(and(eq(runSources.syncId, syncId), eq(runSources.source, source)))
        .run();
    },
  };
}
