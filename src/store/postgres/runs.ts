/**
 * A trigger's runs with their export checkpoints, and each run's sources.
 */
import { and, asc, eq, getTableColumns, max, sql } from "drizzle-orm";
import { p, value } from "../placeholders.js";
import { found, groupBySyncId, keepJson, toRun as mapRun } from "../rows.js";
import type { RunRepo } from "../store.js";
import type { Run } from "../types.js";
import { type Conn, onFirstUse } from "./connection.js";
import { runSources, runs } from "./schema.js";

/** A run source as `sourcesOf` returns it: its export counts stay in the table. */
const { counts: _counts, ...sourceColumns } = getTableColumns(runSources);

type RunRow = typeof runs.$inferSelect;

// Every export page runs it: a named prepared statement, parsed and planned once per connection.
const CHECKPOINT = "syncmirror_runs_checkpoint";
const CHECKPOINT_SQL = `UPDATE runs SET next_offset = $2, upserted = upserted + $3, unchanged = unchanged + $4,
    rejected = rejected + $5, keys_new = keys_new + $6, keys_changed = keys_changed + $7, ingest = $8
  WHERE sync_id = $1`;

const toRun = (row: RunRow): Run => mapRun(row, keepJson);

export function createRunRepo({ db, client }: Conn): RunRepo {
  // Each poll of a trigger's runs, and each run's first and last pages, run these.
  const bySyncId = eq(runs.syncId, p("syncId"));
  const getRun = onFirstUse(() => db.select().from(runs).where(bySyncId).prepare("syncmirror_runs_get"));
  // A listing that lacks the run's creation time keeps the one already known.
  const setStatus = onFirstUse(() =>
    db
      .update(runs)
      .set({
        status: value("status"),
        createdAt: sql`coalesce(${p("createdAt")}::timestamptz, ${runs.createdAt})`,
      })
      .where(bySyncId)
      .prepare("syncmirror_runs_set_status"),
  );
  const sourcesOfRun = onFirstUse(() =>
    db
      .select(sourceColumns)
      .from(runSources)
      .where(eq(runSources.syncId, p("syncId")))
      .prepare("syncmirror_runs_sources_of"),
  );
  const setSwept = onFirstUse(() =>
    db
      .update(runSources)
      .set({ swept: value("swept") })
      .where(and(eq(runSources.syncId, p("syncId")), eq(runSources.source, p("source"))))
      .prepare("syncmirror_runs_set_swept"),
  );
  return {
    async newestCreatedAt(mirror) {
      const [row] = await db
        .select({ v: max(runs.createdAt) })
        .from(runs)
        .where(eq(runs.mirror, mirror));
      return row?.v ?? null;
    },

    async isKnown(syncId) {
      const rows = await db.select({ s: runs.syncId }).from(runs).where(eq(runs.syncId, syncId));
      return rows.length > 0;
    },

    async insertMany(triggerRowId, mirror, newRuns) {
      if (newRuns.length === 0) return;
      await db
        .insert(runs)
        .values(newRuns.map((r) => ({ ...r, triggerRowId, mirror })))
        .onConflictDoNothing();
    },

    async ofTrigger(triggerRowId) {
      const rows = await db
        .select()
        .from(runs)
        .where(eq(runs.triggerRowId, triggerRowId))
        .orderBy(asc(runs.syncId));
      return rows.map(toRun);
    },

    async get(syncId) {
      const [row] = await getRun().execute({ syncId });
      return toRun(found(row, `run ${syncId}`));
    },

    async updateStatus(syncId, status, createdAt) {
      await setStatus().execute({ syncId, status, createdAt: createdAt || null });
    },

    async setIngest(syncId, ingest, error = null) {
      await db.update(runs).set({ ingest, error }).where(eq(runs.syncId, syncId));
    },

    async countContinue(syncId, pending) {
      await db
        .update(runs)
        .set({ continuesSent: sql`${runs.continuesSent} + 1`, continuePending: pending })
        .where(eq(runs.syncId, syncId));
    },

    async clearContinuePending(syncId) {
      await db.update(runs).set({ continuePending: null }).where(eq(runs.syncId, syncId));
    },

    async saveFirstPage(syncId, p) {
      // Two tables, so the two statements may run in either order: sent together (the client
      // pipelines), one round trip.
      const saved = db
        .update(runs)
        .set({ schemaVersion: p.schemaVersion, engineVersion: p.engineVersion, diagnostics: p.diagnostics })
        .where(eq(runs.syncId, syncId))
        .execute();
      // One row per label, the last one winning as in row-by-row upserts: a single INSERT may not
      // update the same row twice.
      const sources = [...new Map(p.sources.map((s) => [s.source, s])).values()];
      if (sources.length === 0) {
        await saved;
        return;
      }
      const inserted = db
        .insert(runSources)
        .values(sources.map((s) => ({ syncId, ...s, counts: s.counts ?? null })))
        .onConflictDoUpdate({
          target: [runSources.syncId, runSources.source],
          set: {
            sourceType: sql`excluded.source_type`,
            serverInstanceId: sql`excluded.server_instance_id`,
            taskStatus: sql`excluded.task_status`,
            exportStatus: sql`excluded.export_status`,
            counts: sql`excluded.counts`,
          },
        })
        .execute();
      await Promise.all([saved, inserted]);
    },

    async checkpoint(syncId, nextOffset, c) {
      await client.query({
        name: CHECKPOINT,
        text: CHECKPOINT_SQL,
        values: [
          syncId,
          nextOffset,
          c.upserted,
          c.unchanged,
          c.rejected,
          c.keysNew,
          c.keysChanged,
          nextOffset === null ? "done" : "ingesting",
        ],
      });
    },

    async sourcesOf(syncId) {
      return sourcesOfRun().execute({ syncId });
    },

    async sourcesOfTrigger(triggerRowId) {
      const rows = await db
        .select(sourceColumns)
        .from(runSources)
        .innerJoin(runs, eq(runs.syncId, runSources.syncId))
        .where(eq(runs.triggerRowId, triggerRowId))
        .orderBy(asc(runSources.syncId), asc(runSources.source));
      return groupBySyncId(rows);
    },

    markSwept: async (syncId, source, swept) => {
      await setSwept().execute({ syncId, source, swept });
    },
  };
}
