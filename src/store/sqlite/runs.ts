/**
 * A trigger's runs with their export checkpoints, and each run's sources.
 */
import { and, asc, eq, getTableColumns, max, sql } from "drizzle-orm";
import { p, value } from "../placeholders.js";
import { found, groupBySyncId, toRun as mapRun, parseJsonText } from "../rows.js";
import type { RunRepo } from "../store.js";
import type { Run } from "../types.js";
import type { Db } from "./open.js";
import { runSources, runs } from "./schema.js";
import { plus, type Sync } from "./sync-repo.js";

type RunRow = typeof runs.$inferSelect;

/** A run source as `sourcesOf` returns it: its export counts stay in the table. */
const { counts: _counts, ...sourceColumns } = getTableColumns(runSources);

const toRun = (row: RunRow): Run => mapRun(row, parseJsonText);

export function createRunRepo(db: Db): Sync<RunRepo> {
  // `ofTrigger` runs after every listing of the runs, so a 500-run trigger reads its runs dozens
  // of times: one prepared statement with the columns aliased to the row's fields, rather than
  // drizzle building and mapping the query on each call.
  const runFields = Object.entries(getTableColumns(runs)).map(([field, c]) => `${c.name} AS ${field}`);
  const runsOfTrigger = db.$client.prepare<[number], RunRow>(
    `SELECT ${runFields.join(", ")} FROM runs WHERE trigger_row_id = ? ORDER BY sync_id`,
  );
  // The statements each run or page repeats are prepared once: drizzle building them on every
  // call cost more than SQLite running them (a 500-run trigger runs them thousands of times).
  const bySyncId = eq(runs.syncId, p("syncId"));
  const insertRun = db
    .insert(runs)
    .values({
      syncId: p("syncId"),
      triggerRowId: p("triggerRowId"),
      mirror: p("mirror"),
      userEmail: p("userEmail"),
      status: p("status"),
      createdAt: p("createdAt"),
    })
    .onConflictDoNothing()
    .prepare();
  const getRun = db.select().from(runs).where(bySyncId).prepare();
  // A listing that lacks the run's creation time keeps the one already known.
  const setStatus = db
    .update(runs)
    .set({ status: value("status"), createdAt: sql`coalesce(${p("createdAt")}, ${runs.createdAt})` })
    .where(bySyncId)
    .prepare();
  const setFirstPage = db
    .update(runs)
    .set({
      schemaVersion: value("schemaVersion"),
      engineVersion: value("engineVersion"),
      diagnostics: value("diagnostics"),
    })
    .where(bySyncId)
    .prepare();
  const sourceValues = {
    sourceType: value("sourceType"),
    serverInstanceId: value("serverInstanceId"),
    taskStatus: value("taskStatus"),
    exportStatus: value("exportStatus"),
    counts: value("counts"),
  };
  const upsertSource = db
    .insert(runSources)
    .values({ syncId: p("syncId"), source: p("source"), ...sourceValues })
    .onConflictDoUpdate({ target: [runSources.syncId, runSources.source], set: sourceValues })
    .prepare();
  const checkpointRun = db
    .update(runs)
    .set({
      nextOffset: value("nextOffset"),
      upserted: plus(runs.upserted, "upserted"),
      unchanged: plus(runs.unchanged, "unchanged"),
      rejected: plus(runs.rejected, "rejected"),
      keysNew: plus(runs.keysNew, "keysNew"),
      keysChanged: plus(runs.keysChanged, "keysChanged"),
      ingest: value("ingest"),
    })
    .where(bySyncId)
    .prepare();
  const sourcesOfRun = db
    .select(sourceColumns)
    .from(runSources)
    .where(eq(runSources.syncId, p("syncId")))
    .prepare();
  const sourcesOfTriggerRuns = db
    .select(sourceColumns)
    .from(runSources)
    .innerJoin(runs, eq(runs.syncId, runSources.syncId))
    .where(eq(runs.triggerRowId, p("triggerRowId")))
    .orderBy(asc(runSources.syncId), asc(runSources.source))
    .prepare();
  const setSwept = db
    .update(runSources)
    .set({ swept: value("swept") })
    .where(and(eq(runSources.syncId, p("syncId")), eq(runSources.source, p("source"))))
    .prepare();

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
      for (const r of newRuns) insertRun.run({ ...r, triggerRowId, mirror });
    },

    ofTrigger(triggerRowId) {
      return runsOfTrigger.all(triggerRowId).map(toRun);
    },

    get(syncId) {
      return toRun(found(getRun.get({ syncId }), `run ${syncId}`));
    },

    updateStatus(syncId, status, createdAt) {
      setStatus.run({ syncId, status, createdAt });
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

    saveFirstPage(syncId, page) {
      setFirstPage.run({
        syncId,
        schemaVersion: page.schemaVersion,
        engineVersion: page.engineVersion,
        diagnostics: JSON.stringify(page.diagnostics),
      });
      for (const s of page.sources)
        upsertSource.run({ syncId, ...s, counts: JSON.stringify(s.counts ?? null) });
    },

    checkpoint(syncId, nextOffset, c) {
      checkpointRun.run({ syncId, nextOffset, ...c, ingest: nextOffset === null ? "done" : "ingesting" });
    },

    sourcesOf(syncId) {
      return sourcesOfRun.all({ syncId });
    },

    sourcesOfTrigger(triggerRowId) {
      return groupBySyncId(sourcesOfTriggerRuns.all({ triggerRowId }));
    },

    markSwept(syncId, source, swept) {
      setSwept.run({ syncId, source, swept });
    },
  };
}
