/**
 * Drizzle tables for PostgreSQL: the same tables and columns as `../sqlite/schema.ts` (docs/reference/database.md, docs/scaling-out.md), with the types Postgres does best: `jsonb` for JSON parts,
 * `timestamptz` for times, `boolean` for flags. Times cross the boundary as `toISOString()` text,
 * the form the domain types use, so the two dialects hand the sync code the same values.
 */
import {
  bigint,
  boolean,
  customType,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
} from "drizzle-orm/pg-core";

/** `timestamptz` read back as `toISOString()` text (drizzle hands over the server's text form). */
export const isoTimestamp = customType<{ data: string; driverData: string | Date }>({
  dataType: () => "timestamp with time zone",
  fromDriver: (value) => toIso(value),
});

export function toIso(value: string | Date): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

export const resources = pgTable(
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
    modifiedAt: isoTimestamp("modified_at"),
    fetchedAt: isoTimestamp("fetched_at"),
    fields: jsonb("fields"),
    metadata: jsonb("metadata"),
    relations: jsonb("relations"),
    attachments: jsonb("attachments"),
    provenance: jsonb("provenance"),
    deletedAt: isoTimestamp("deleted_at"),
    /** Internal: the export's engine_version when this row was last written. */
    engineVersion: text("engine_version"),
    /** Internal: local time of the last write. */
    updatedAt: isoTimestamp("updated_at").notNull(),
  },
  (t) => [index("resources_deleted_at").on(t.deletedAt)],
);

export const resourceAccess = pgTable(
  "resource_access",
  {
    mirror: text("mirror").notNull(),
    userEmail: text("user_email").notNull(),
    key: text("key").notNull(),
    serverInstanceId: text("server_instance_id").notNull(),
    source: text("source").notNull(),
    /** Server `created_at` of the newest run that saw this key for this user. */
    lastSeenAt: isoTimestamp("last_seen_at").notNull(),
    /** Internal: full snapshots in a row this pair's source succeeded without seeing the key. */
    missedFullCount: integer("missed_full_count").notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.mirror, t.userEmail, t.key] }),
    index("resource_access_pair").on(t.mirror, t.userEmail, t.serverInstanceId, t.lastSeenAt),
    // By key first (who else holds this key). The mirror is there for SQLite's countLive, which
    // reads a mirror's keys from this index alone; the same here keeps one schema for both.
    index("resource_access_key_mirror").on(t.key, t.mirror),
    // Consumers filter by user ("what may this person see"); SQLite readers are local and few.
    index("resource_access_user").on(t.userEmail, t.key),
  ],
);

export const changes = pgTable(
  "changes",
  {
    seq: bigint("seq", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    key: text("key").notNull(),
    op: text("op", { enum: ["upsert", "delete", "access"] }).notNull(),
    at: isoTimestamp("at").notNull(),
    /** Internal: which mirror and run caused it (a key changes at most once per run ingested). */
    mirror: text("mirror"),
    syncId: text("sync_id"),
  },
  (t) => [index("changes_run_key").on(t.syncId, t.key)],
);

/** One row per mirror: what `status` shows. */
export const mirrorState = pgTable("mirror_state", {
  mirror: text("mirror").primaryKey(),
  syncConfigId: text("sync_config_id").notNull(),
  lastIncrementalSuccessAt: isoTimestamp("last_incremental_success_at"),
  lastFullSuccessAt: isoTimestamp("last_full_success_at"),
  lastOutcome: text("last_outcome"),
  lastOutcomeAt: isoTimestamp("last_outcome_at"),
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

/** A trigger's life: `intent` before the POST, `active` once its runs are known, `done` once settled. */
export const triggers = pgTable(
  "triggers",
  {
    id: integer("id").primaryKey().generatedAlwaysAsIdentity(),
    mirror: text("mirror").notNull(),
    mode: text("mode", { enum: ["incremental", "full"] }).notNull(),
    since: isoTimestamp("since"),
    state: text("state", { enum: ["intent", "active", "done"] }).notNull(),
    triggerId: text("trigger_id").unique(),
    /** Server `created_at` of the newest run the mirror knew when the intent was written. */
    knownBefore: isoTimestamp("known_before"),
    intentAt: isoTimestamp("intent_at").notNull(),
    allowMassDelete: boolean("allow_mass_delete").notNull().default(false),
    /** A `sync --full --dry-run`: its runs are read, never ingested, whichever pass resumes it. */
    dryRun: boolean("dry_run").notNull().default(false),
    adopted: boolean("adopted").notNull().default(false),
    skipped: jsonb("skipped"),
    skippedCount: integer("skipped_count").notNull().default(0),
    startedAt: isoTimestamp("started_at"),
    finishedAt: isoTimestamp("finished_at"),
    outcome: text("outcome"),
    message: text("message"),
    summary: jsonb("summary"),
    deleted: integer("deleted").notNull().default(0),
    revoked: integer("revoked").notNull().default(0),
    /** Keys whose revocation the mass-delete guard held back in this trigger's sweep, each once. */
    held: integer("held").notNull().default(0),
    sweepsHeld: integer("sweeps_held").notNull().default(0),
    /** The access check that decides who left could not be read: nobody lost access for leaving. */
    leaversUnknown: boolean("leavers_unknown").notNull().default(false),
    leaversSwept: boolean("leavers_swept").notNull().default(false),
    /** The process that started the pass: its instance id and `hostname:pid`. */
    startedBy: text("started_by"),
    startedByName: text("started_by_name"),
    /** The due pass it served (when it became due, why); null for `sync`. */
    dueAt: isoTimestamp("due_at"),
    dueReason: text("due_reason", { enum: ["schedule", "catch-up", "requested"] }),
  },
  (t) => [
    index("triggers_mirror_state").on(t.mirror, t.state),
    // The history pages newest first, per mirror or not.
    index("triggers_mirror_id").on(t.mirror, t.id),
  ],
);

export const runs = pgTable(
  "runs",
  {
    syncId: text("sync_id").primaryKey(),
    triggerRowId: integer("trigger_row_id").notNull(),
    mirror: text("mirror").notNull(),
    userEmail: text("user_email").notNull(),
    status: text("status").notNull(),
    /** Server clock; unknown until the run list first shows the run (the trigger response lacks it). */
    createdAt: isoTimestamp("created_at"),
    ingest: text("ingest", { enum: ["waiting", "ingesting", "done", "failed"] })
      .notNull()
      .default("waiting"),
    /** Checkpoint: the next export offset to read; null once every page is in. */
    nextOffset: integer("next_offset").default(0),
    continuesSent: integer("continues_sent").notNull().default(0),
    /** A continue counted but not yet known to have arrived: `{source: completed_at}`. */
    continuePending: jsonb("continue_pending"),
    schemaVersion: text("schema_version"),
    engineVersion: text("engine_version"),
    /** First-page diagnostics, kept for operators. */
    diagnostics: jsonb("diagnostics"),
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

export const runSources = pgTable(
  "run_sources",
  {
    syncId: text("sync_id").notNull(),
    source: text("source").notNull(),
    sourceType: text("source_type").notNull(),
    serverInstanceId: text("server_instance_id").notNull(),
    taskStatus: text("task_status").notNull(),
    exportStatus: text("export_status"),
    counts: jsonb("counts"),
    /** A full snapshot's sweep for this source's pair: `applying` while its revocations are committed a batch at a time, then `applied` (or `held`). */
    swept: text("swept", { enum: ["applying", "applied", "held"] }),
  },
  (t) => [primaryKey({ columns: [t.syncId, t.source] })],
);

/** One (mirror, user, server): its watermark and whether it still holds access. */
export const pairs = pgTable(
  "pairs",
  {
    mirror: text("mirror").notNull(),
    userEmail: text("user_email").notNull(),
    serverInstanceId: text("server_instance_id").notNull(),
    /** Server `created_at` of the last run in which this pair's source succeeded. */
    watermark: isoTimestamp("watermark"),
    /** Server `created_at` of the run that first saw the pair. */
    firstSeenAt: isoTimestamp("first_seen_at").notNull(),
    awaitingBaseline: boolean("awaiting_baseline").notNull().default(false),
    /** Latest skip reason from a trigger (null when the pair ran). */
    skipReason: text("skip_reason"),
    authStatus: text("auth_status"),
    retiredAt: isoTimestamp("retired_at"),
    retiredReason: text("retired_reason"),
  },
  (t) => [primaryKey({ columns: [t.mirror, t.userEmail, t.serverInstanceId] })],
);

/**
 * Which replica may run a mirror's pass (docs/scaling-out.md); expiry judged by the database clock.
 * `holder` is the process's instance id, `holder_name` its `hostname:pid`, `holder_scope` where
 * that pid is meaningful (`lease-holder.ts`); `epoch` (the fencing token) grows at every takeover;
 * a released lease keeps its row (and its epoch) with `released_at` set.
 */
export const leases = pgTable("leases", {
  mirror: text("mirror").primaryKey(),
  holder: text("holder").notNull(),
  expiresAt: isoTimestamp("expires_at").notNull(),
  holderName: text("holder_name").notNull().default(""),
  epoch: integer("epoch").notNull().default(0),
  leaseSeconds: integer("lease_seconds").notNull().default(0),
  releasedAt: isoTimestamp("released_at"),
  holderScope: text("holder_scope"),
});

/**
 * Each mirror's schedule, shared by every replica (`store/schedule-rules.ts`): the latest scheduled
 * time of each cron recorded, the pass due (mode, why, since when, who asked), and the pause.
 */
export const schedules = pgTable("schedules", {
  mirror: text("mirror").primaryKey(),
  incrementalSlot: isoTimestamp("incremental_slot").notNull(),
  fullSlot: isoTimestamp("full_slot").notNull(),
  dueMode: text("due_mode", { enum: ["incremental", "full"] }),
  dueReason: text("due_reason", { enum: ["schedule", "catch-up", "requested"] }),
  dueAt: isoTimestamp("due_at"),
  dueBy: text("due_by"),
  pausedAt: isoTimestamp("paused_at"),
  pausedBy: text("paused_by"),
});

/** Live replicas by heartbeat (database clock): `instance_id`, `name` (`hostname:pid`), slots and passes running. */
export const replicas = pgTable("replicas", {
  instanceId: text("instance_id").primaryKey(),
  name: text("name").notNull(),
  startedAt: isoTimestamp("started_at").notNull(),
  seenAt: isoTimestamp("seen_at").notNull(),
  expiresAt: isoTimestamp("expires_at").notNull(),
  slots: integer("slots").notNull(),
  running: integer("running").notNull(),
  /** Where its pid names it (`lease-holder.ts`): a daemon killed on this host is gone before its heartbeat expires. */
  scope: text("scope"),
});

/** Operators' pause, resume and trigger, with who and when (the history shows them). */
export const controlActions = pgTable(
  "control_actions",
  {
    id: integer("id").primaryKey().generatedAlwaysAsIdentity(),
    mirror: text("mirror").notNull(),
    action: text("action").notNull(),
    mode: text("mode", { enum: ["incremental", "full"] }),
    actor: text("actor").notNull(),
    at: isoTimestamp("at").notNull(),
  },
  (t) => [index("control_actions_mirror").on(t.mirror, t.id)],
);

/** `sync --full --dry-run` scratch: keys each user saw in the snapshot, by trigger. */
export const dryRunSeen = pgTable(
  "dry_run_seen",
  {
    triggerRowId: integer("trigger_row_id").notNull(),
    userEmail: text("user_email").notNull(),
    key: text("key").notNull(),
  },
  (t) => [primaryKey({ columns: [t.triggerRowId, t.userEmail, t.key] })],
);

/** `sync --full --dry-run` scratch: access rows the sweep would remove, by trigger. */
export const dryRunRevoke = pgTable(
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
export const managedSyncConfigs = pgTable("managed_sync_configs", {
  mirror: text("mirror").primaryKey(),
  syncConfigId: text("sync_config_id"),
  projectId: text("project_id"),
  name: text("name"),
  origin: text("origin", { enum: ["created", "adopted"] }),
  creatingAt: isoTimestamp("creating_at"),
  adoptedAt: isoTimestamp("adopted_at"),
  appliedHash: text("applied_hash"),
  appliedAt: isoTimestamp("applied_at"),
  fullPendingAfter: integer("full_pending_after"),
  lastError: text("last_error"),
  lastErrorAt: isoTimestamp("last_error_at"),
  /** When the current run of errors began (the problem's first sighting); cleared by an apply. */
  firstErrorAt: isoTimestamp("first_error_at"),
});

/**
 * Every error a pass met, kept with its trigger across resumed attempts (the history): a whole
 * attempt's failure (no `sync_id`), a run that could not be read, a source that did not succeed.
 */
export const passErrors = pgTable(
  "pass_errors",
  {
    id: integer("id").primaryKey().generatedAlwaysAsIdentity(),
    triggerRowId: integer("trigger_row_id").notNull(),
    at: isoTimestamp("at").notNull(),
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
export const problems = pgTable(
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
    firstSeenAt: isoTimestamp("first_seen_at").notNull(),
    lastSeenAt: isoTimestamp("last_seen_at").notNull(),
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
export const sweepApprovals = pgTable(
  "sweep_approvals",
  {
    id: integer("id").primaryKey().generatedAlwaysAsIdentity(),
    mirror: text("mirror").notNull(),
    userEmail: text("user_email").notNull(),
    serverInstanceId: text("server_instance_id").notNull(),
    upTo: integer("up_to").notNull(),
    by: text("by").notNull(),
    at: isoTimestamp("at").notNull(),
    triggerRowId: integer("trigger_row_id"),
    /** Revocations the pass that took it applied on it. */
    used: integer("used").notNull().default(0),
  },
  (t) => [index("sweep_approvals_mirror").on(t.mirror, t.triggerRowId)],
);
