/**
 * Drizzle tables. `resources`, `resource_access` and `changes` are public (docs/reference/database.md):
 * readers outside syncmirror rely on their names and columns. The rest is internal state that
 * must survive a restart. Timestamps are ISO-8601 UTC text; `*_at` columns from the server clock
 * are normalised with `toISOString()` so they compare as text.
 */
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

export const resources = sqliteTable(
  "resources",
  {
    key: text("key").primaryKey(),
    contentHash: text("content_hash").notNull(),
    contentText: text("content_text"),
    contentFormat: text("content_format"),
    contentStatus: text("content_status"),
    title: text("title"),
    url: text("url"),
    type: text("type"),
    sourceType: text("source_type").notNull(),
    serverInstanceId: text("server_instance_id").notNull(),
    nativeId: text("native_id").notNull(),
    modifiedAt: text("modified_at"),
    fetchedAt: text("fetched_at"),
    fields: text("fields"),
    metadata: text("metadata"),
    relations: text("relations"),
    attachments: text("attachments"),
    provenance: text("provenance"),
    deletedAt: text("deleted_at"),
    /** Internal: the export's engine_version when this row was last written. */
    engineVersion: text("engine_version"),
    /** Internal: local time of the last write. */
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("resources_deleted_at").on(t.deletedAt)],
);

export const resourceAccess = sqliteTable(
  "resource_access",
  {
    mirror: text("mirror").notNull(),
    userEmail: text("user_email").notNull(),
    key: text("key").notNull(),
    serverInstanceId: text("server_instance_id").notNull(),
    source: text("source").notNull(),
    /** Server `created_at` of the newest run that saw this key for this user. */
    lastSeenAt: text("last_seen_at").notNull(),
    /** Internal: full snapshots in a row this pair's source succeeded without seeing the key. */
    missedFullCount: integer("missed_full_count").notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.mirror, t.userEmail, t.key] }),
    index("resource_access_pair").on(t.mirror, t.userEmail, t.serverInstanceId, t.lastSeenAt),
    // By key first (who else holds this key); with the mirror, so counting a mirror's live keys
    // reads this index in key order and never the rows (access.countLive).
    index("resource_access_key_mirror").on(t.key, t.mirror),
    // Consumers' per-user query (docs/reference/database.md) reads a user's keys through this, not every live resource.
    index("resource_access_user").on(t.userEmail, t.key),
  ],
);

export const changes = sqliteTable(
  "changes",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    key: text("key").notNull(),
    op: text("op", { enum: ["upsert", "delete", "access"] }).notNull(),
    at: text("at").notNull(),
    /** Internal: which mirror and run caused it (a key changes at most once per run ingested). */
    mirror: text("mirror"),
    syncId: text("sync_id"),
  },
  (t) => [index("changes_run_key").on(t.syncId, t.key)],
);

/** One row per mirror: what `status` shows. */
export const mirrorState = sqliteTable("mirror_state", {
  mirror: text("mirror").primaryKey(),
  syncConfigId: text("sync_config_id").notNull(),
  lastIncrementalSuccessAt: text("last_incremental_success_at"),
  lastFullSuccessAt: text("last_full_success_at"),
  lastOutcome: text("last_outcome"),
  lastOutcomeAt: text("last_outcome_at"),
  lastMessage: text("last_message"),
  /** Keys whose revocation the latest full pass's held sweeps hold back (a key several users would lose counts once). */
  heldRevocations: integer("held_revocations").notNull().default(0),
  /**
   * The mirror owes a full pass: `sync_config_id` changed, and the state above belongs to the old
   * config. The newest trigger row id of the mirror then; a full trigger with a higher id that
   * succeeds clears it.
   */
  fullPendingAfter: integer("full_pending_after"),
});

/**
 * A trigger's life: `intent` is written before the POST (so a crash leaves a trace to adopt from),
 * `active` once its runs are known, `done` once settled.
 */
export const triggers = sqliteTable(
  "triggers",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    mirror: text("mirror").notNull(),
    mode: text("mode", { enum: ["incremental", "full"] }).notNull(),
    since: text("since"),
    state: text("state", { enum: ["intent", "active", "done"] }).notNull(),
    triggerId: text("trigger_id").unique(),
    /** Server `created_at` of the newest run the mirror knew when the intent was written. */
    knownBefore: text("known_before"),
    intentAt: text("intent_at").notNull(),
    allowMassDelete: integer("allow_mass_delete", { mode: "boolean" }).notNull().default(false),
    /** A `sync --full --dry-run`: its runs are read, never ingested, whichever pass resumes it. */
    dryRun: integer("dry_run", { mode: "boolean" }).notNull().default(false),
    adopted: integer("adopted", { mode: "boolean" }).notNull().default(false),
    skipped: text("skipped"),
    skippedCount: integer("skipped_count").notNull().default(0),
    startedAt: text("started_at"),
    finishedAt: text("finished_at"),
    outcome: text("outcome"),
    message: text("message"),
    summary: text("summary"),
    deleted: integer("deleted").notNull().default(0),
    revoked: integer("revoked").notNull().default(0),
    /** Keys whose revocation the mass-delete guard held back in this trigger's sweep, each once. */
    held: integer("held").notNull().default(0),
    sweepsHeld: integer("sweeps_held").notNull().default(0),
    /** The access check that decides who left could not be read: nobody lost access for leaving. */
    leaversUnknown: integer("leavers_unknown", { mode: "boolean" }).notNull().default(false),
    leaversSwept: integer("leavers_swept", { mode: "boolean" }).notNull().default(false),
    /** The process that started the pass: its instance id and `hostname:pid`. */
    startedBy: text("started_by"),
    startedByName: text("started_by_name"),
    /** The due pass it served (when it became due, why); null for `sync`. */
    dueAt: text("due_at"),
    dueReason: text("due_reason", { enum: ["schedule", "catch-up", "requested"] }),
  },
  (t) => [
    index("triggers_mirror_state").on(t.mirror, t.state),
    // The history pages newest first, per mirror or not.
    index("triggers_mirror_id").on(t.mirror, t.id),
  ],
);

export const runs = sqliteTable(
  "runs",
  {
    syncId: text("sync_id").primaryKey(),
    triggerRowId: integer("trigger_row_id").notNull(),
    mirror: text("mirror").notNull(),
    userEmail: text("user_email").notNull(),
    status: text("status").notNull(),
    /** Server clock; unknown until the run list first shows the run (the trigger response lacks it). */
    createdAt: text("created_at"),
    ingest: text("ingest", { enum: ["waiting", "ingesting", "done", "failed"] })
      .notNull()
      .default("waiting"),
    /** Checkpoint: the next export offset to read; null once every page is in. */
    nextOffset: integer("next_offset").default(0),
    continuesSent: integer("continues_sent").notNull().default(0),
    /**
     * A continue counted but not yet known to have arrived: JSON `{source: completed_at}` of the
     * INCOMPLETE sources it was sent for, written before the POST and cleared once it is answered.
     */
    continuePending: text("continue_pending"),
    schemaVersion: text("schema_version"),
    engineVersion: text("engine_version"),
    /** First-page diagnostics, kept for operators: excluded, undecided, unresolved_requests, unmatched_tool_calls. */
    diagnostics: text("diagnostics"),
    error: text("error"),
    upserted: integer("upserted").notNull().default(0),
    unchanged: integer("unchanged").notNull().default(0),
    /** Resources refused one by one (invalid shape), with the reason logged. */
    rejected: integer("rejected").notNull().default(0),
    /**
     * Distinct keys this run's pages wrote that the pass had not written before: `new` had no row,
     * `changed` had another content hash or was a tombstone (the summary's `keys`).
     */
    keysNew: integer("keys_new").notNull().default(0),
    keysChanged: integer("keys_changed").notNull().default(0),
  },
  (t) => [index("runs_trigger").on(t.triggerRowId)],
);

export const runSources = sqliteTable(
  "run_sources",
  {
    syncId: text("sync_id").notNull(),
    source: text("source").notNull(),
    sourceType: text("source_type").notNull(),
    serverInstanceId: text("server_instance_id").notNull(),
    taskStatus: text("task_status").notNull(),
    exportStatus: text("export_status"),
    counts: text("counts"),
    /** A full snapshot's sweep for this source's pair: `applying` while its revocations are committed a batch at a time, then `applied` (or `held`). */
    swept: text("swept", { enum: ["applying", "applied", "held"] }),
  },
  (t) => [primaryKey({ columns: [t.syncId, t.source] })],
);

/** One (mirror, user, server): its watermark and whether it still holds access. */
export const pairs = sqliteTable(
  "pairs",
  {
    mirror: text("mirror").notNull(),
    userEmail: text("user_email").notNull(),
    serverInstanceId: text("server_instance_id").notNull(),
    /** Server `created_at` of the last run in which this pair's source succeeded. */
    watermark: text("watermark"),
    /** Server `created_at` of the run that first saw the pair. */
    firstSeenAt: text("first_seen_at").notNull(),
    awaitingBaseline: integer("awaiting_baseline", { mode: "boolean" }).notNull().default(false),
    /** Latest skip reason from a trigger (null when the pair ran). */
    skipReason: text("skip_reason"),
    authStatus: text("auth_status"),
    retiredAt: text("retired_at"),
    retiredReason: text("retired_reason"),
  },
  (t) => [primaryKey({ columns: [t.mirror, t.userEmail, t.serverInstanceId] })],
);

/**
 * Which process may run a mirror's pass (docs/scaling-out.md); on SQLite the file lock already says
 * one, but the same fencing runs. `holder` is the process's instance id, `holder_name` its
 * `hostname:pid`, `holder_scope` where that pid is meaningful (`lease-holder.ts`); `epoch` (the
 * fencing token) grows at every takeover; a released lease keeps its row (and its epoch) with
 * `released_at` set.
 */
export const leases = sqliteTable("leases", {
  mirror: text("mirror").primaryKey(),
  holder: text("holder").notNull(),
  expiresAt: text("expires_at").notNull(),
  holderName: text("holder_name").notNull().default(""),
  epoch: integer("epoch").notNull().default(0),
  leaseSeconds: integer("lease_seconds").notNull().default(0),
  releasedAt: text("released_at"),
  holderScope: text("holder_scope"),
});

/**
 * Each mirror's schedule, shared by every process (`store/schedule-rules.ts`): the latest scheduled
 * time of each cron recorded, the pass due (mode, why, since when, who asked), and the pause.
 */
export const schedules = sqliteTable("schedules", {
  mirror: text("mirror").primaryKey(),
  incrementalSlot: text("incremental_slot").notNull(),
  fullSlot: text("full_slot").notNull(),
  dueMode: text("due_mode", { enum: ["incremental", "full"] }),
  dueReason: text("due_reason", { enum: ["schedule", "catch-up", "requested"] }),
  dueAt: text("due_at"),
  dueBy: text("due_by"),
  pausedAt: text("paused_at"),
  pausedBy: text("paused_by"),
});

/** Live daemons by heartbeat: `instance_id`, `name` (`hostname:pid`), slots and passes running. */
export const replicas = sqliteTable("replicas", {
  instanceId: text("instance_id").primaryKey(),
  name: text("name").notNull(),
  startedAt: text("started_at").notNull(),
  seenAt: text("seen_at").notNull(),
  expiresAt: text("expires_at").notNull(),
  slots: integer("slots").notNull(),
  running: integer("running").notNull(),
  /** Where its pid names it (`lease-holder.ts`): a daemon killed on this host is gone before its heartbeat expires. */
  scope: text("scope"),
});

/** Operators' pause, resume and trigger, with who and when (the history shows them). */
export const controlActions = sqliteTable(
  "control_actions",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    mirror: text("mirror").notNull(),
    action: text("action").notNull(),
    mode: text("mode", { enum: ["incremental", "full"] }),
    actor: text("actor").notNull(),
    at: text("at").notNull(),
  },
  (t) => [index("control_actions_mirror").on(t.mirror, t.id)],
);

/** `sync --full --dry-run` scratch: keys each user saw in the snapshot, by trigger. */
export const dryRunSeen = sqliteTable(
  "dry_run_seen",
  {
    triggerRowId: integer("trigger_row_id").notNull(),
    userEmail: text("user_email").notNull(),
    key: text("key").notNull(),
  },
  (t) => [primaryKey({ columns: [t.triggerRowId, t.userEmail, t.key] })],
);

/** `sync --full --dry-run` scratch: access rows the sweep would remove, by trigger. */
export const dryRunRevoke = sqliteTable(
  "dry_run_revoke",
  {
    triggerRowId: integer("trigger_row_id").notNull(),
    mirror: text("mirror").notNull(),
    userEmail: text("user_email").notNull(),
    key: text("key").notNull(),
  },
  (t) => [primaryKey({ columns: [t.triggerRowId, t.mirror, t.userEmail, t.key] })],
);

/** The sync configs syncmirror created or adopted for declared mirrors (`store/managed-sync-configs.ts`). */
export const managedSyncConfigs = sqliteTable("managed_sync_configs", {
  mirror: text("mirror").primaryKey(),
  syncConfigId: text("sync_config_id"),
  projectId: text("project_id"),
  name: text("name"),
  origin: text("origin", { enum: ["created", "adopted"] }),
  creatingAt: text("creating_at"),
  adoptedAt: text("adopted_at"),
  appliedHash: text("applied_hash"),
  appliedAt: text("applied_at"),
  fullPendingAfter: integer("full_pending_after"),
  lastError: text("last_error"),
  lastErrorAt: text("last_error_at"),
  /** When the current run of errors began (the problem's first sighting); cleared by an apply. */
  firstErrorAt: text("first_error_at"),
});

/**
 * Every error a pass met, kept with its trigger across resumed attempts (the history): a whole
 * attempt's failure (no `sync_id`), a run that could not be read, a source that did not succeed.
 */
export const passErrors = sqliteTable(
  "pass_errors",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    triggerRowId: integer("trigger_row_id").notNull(),
    at: text("at").notNull(),
    syncId: text("sync_id"),
    userEmail: text("user_email"),
    source: text("source"),
    error: text("error").notNull(),
    /** `hostname:pid` of the process that met it. */
    replica: text("replica"),
  },
  (t) => [index("pass_errors_trigger").on(t.triggerRowId, t.id)],
);

/**
 * Open problems (`syncmirror problems`), one row per thing that is wrong, written in the same
 * transaction as the fact it describes and deleted by the one that shows it fixed. `subject` names
 * the thing within the mirror (kind group, user, server or key).
 */
export const problems = sqliteTable(
  "problems",
  {
    mirror: text("mirror").notNull(),
    subject: text("subject").notNull(),
    kind: text("kind").notNull(),
    userEmail: text("user_email"),
    serverInstanceId: text("server_instance_id"),
    source: text("source"),
    syncId: text("sync_id"),
    key: text("key"),
    reason: text("reason").notNull(),
    count: integer("count"),
    firstSeenAt: text("first_seen_at").notNull(),
    lastSeenAt: text("last_seen_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.mirror, t.subject] }),
    index("problems_pair").on(t.mirror, t.userEmail, t.serverInstanceId),
  ],
);

/**
 * `approve-sweep` (`sync/sweep-approval.ts`): one row per pair whose sweep the guard held, with how
 * many revocations it may apply. Pending while `trigger_row_id` is null; the next full pass that
 * sweeps the pair takes its row (sets it), so exactly one pass uses it.
 */
export const sweepApprovals = sqliteTable(
  "sweep_approvals",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    mirror: text("mirror").notNull(),
    userEmail: text("user_email").notNull(),
    serverInstanceId: text("server_instance_id").notNull(),
    upTo: integer("up_to").notNull(),
    by: text("by").notNull(),
    at: text("at").notNull(),
    triggerRowId: integer("trigger_row_id"),
    /** Revocations the pass that took it applied on it. */
    used: integer("used").notNull().default(0),
  },
  (t) => [index("sweep_approvals_mirror").on(t.mirror, t.triggerRowId)],
);
