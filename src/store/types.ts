/**
 * The domain objects the store hands to the sync code, the same whichever dialect holds them.
 * Times are ISO-8601 UTC strings (`toISOString()` form) so they compare as text in both dialects;
 * JSON parts are parsed once, here at the boundary, never by callers.
 */

/** How a pass asks for its snapshot: with a `since` (incremental) or without (full). */
export const MODES = ["incremental", "full"] as const;
export type Mode = (typeof MODES)[number];
export type TriggerState = "intent" | "active" | "done";
export type IngestState = "waiting" | "ingesting" | "done" | "failed";
export type ChangeOp = "upsert" | "delete" | "access";

/** A pair the trigger did not run, as the trigger response listed it. */
export interface SkippedPairRecord {
  user_email: string;
  server_instance_id: string;
  reason: string;
  auth_status?: string | null;
  server_name?: string | null;
}

export interface Trigger {
  /** Our row id (the upstream id is `triggerId`, unknown while the trigger is an intent). */
  id: number;
  mirror: string;
  mode: Mode;
  since: string | null;
  state: TriggerState;
  triggerId: string | null;
  /** Server `created_at` of the newest run the mirror knew when the intent was written. */
  knownBefore: string | null;
  intentAt: string;
  allowMassDelete: boolean;
  /** A `sync --full --dry-run`: its runs are read, never ingested, whichever pass resumes it. */
  dryRun: boolean;
  adopted: boolean;
  /** Null when the runs were adopted: the response, and so its skipped list, was lost. */
  skipped: SkippedPairRecord[] | null;
  skippedCount: number;
  startedAt: string | null;
  finishedAt: string | null;
  outcome: string | null;
  message: string | null;
  deleted: number;
  revoked: number;
  held: number;
  sweepsHeld: number;
  leaversUnknown: boolean;
  leaversSwept: boolean;
  /** The process that started the pass (wrote the intent): its instance id and `hostname:pid`. */
  startedBy: string | null;
  startedByName: string | null;
  /** The due pass it served: when that became due and why; null for `sync` (a one-shot). */
  dueAt: string | null;
  dueReason: DueReason | null;
}

/** An active trigger: its upstream id is known. */
export type ActiveTrigger = Trigger & { triggerId: string };

/** Source label -> its `completed_at` when a continue was decided for it. */
export type PendingContinue = Record<string, string | null>;

export interface Run {
  syncId: string;
  triggerRowId: number;
  mirror: string;
  userEmail: string;
  status: string;
  /** Server clock; unknown until the run list first shows the run (the trigger response lacks it). */
  createdAt: string | null;
  ingest: IngestState;
  /** Checkpoint: the next export offset to read; null once every page is in. */
  nextOffset: number | null;
  continuesSent: number;
  continuePending: PendingContinue | null;
  schemaVersion: string | null;
  engineVersion: string | null;
  error: string | null;
  upserted: number;
  unchanged: number;
  rejected: number;
  /** Distinct keys the run's pages wrote first in their pass (see the schema). */
  keysNew: number;
  keysChanged: number;
}

/** One exported row as access records it: the user saw the key through the mirror. */
export interface SeenRow extends PairRef {
  key: string;
  source: string;
  /** Server `created_at` of the run that saw it. */
  seenAt: string;
}

/** One entry of the change feed, as the sync code records it. */
export interface ChangeRecord {
  key: string;
  op: ChangeOp;
  at: string;
  mirror: string;
  /** A run's sync_id, or a sweep's id: at most one change per key within it. */
  scope: string;
}

/** What one export page did, added to its run by the checkpoint. */
export interface PageCounts {
  upserted: number;
  unchanged: number;
  rejected: number;
  keysNew: number;
  keysChanged: number;
}

export interface NewRun {
  syncId: string;
  userEmail: string;
  status: string;
  createdAt: string | null;
}

export interface RunSource {
  syncId: string;
  source: string;
  sourceType: string;
  serverInstanceId: string;
  taskStatus: string;
  exportStatus: string | null;
  swept: "applying" | "applied" | "held" | null;
}

export interface SourceReport {
  source: string;
  sourceType: string;
  serverInstanceId: string;
  taskStatus: string;
  exportStatus: string | null;
  counts: unknown;
}

export interface MirrorState {
  mirror: string;
  syncConfigId: string;
  lastIncrementalSuccessAt: string | null;
  lastFullSuccessAt: string | null;
  lastOutcome: string | null;
  lastOutcomeAt: string | null;
  lastMessage: string | null;
  heldRevocations: number;
  /** The mirror owes a full pass: its `sync_config_id` changed (`../store/full-owed.ts`). */
  fullPendingAfter: number | null;
}

/**
 * A mirror the database knows (access rows or a `mirror_state` row) that the config no longer
 * names: no pass runs for it, so nothing ever sweeps what it grants (`syncmirror forget`).
 */
export interface RetiredMirror {
  mirror: string;
  /** Distinct users and keys its `resource_access` rows still grant. */
  users: number;
  keys: number;
}

/** One (mirror, user, server). A type, not an interface: drizzle takes it as placeholder values. */
export type PairRef = {
  mirror: string;
  userEmail: string;
  serverInstanceId: string;
};

export interface Pair extends PairRef {
  /** Server `created_at` of the last run in which this pair's source succeeded. */
  watermark: string | null;
  firstSeenAt: string;
  awaitingBaseline: boolean;
  skipReason: string | null;
  authStatus: string | null;
  retiredAt: string | null;
  retiredReason: string | null;
}

/** A resource as the mirror stores it: the export's resource, validated, JSON parts as objects. */
export interface ResourceInput {
  key: string;
  contentHash: string;
  contentText: string | null;
  contentFormat: string | null;
  contentStatus: string | null;
  title: string | null;
  url: string | null;
  type: string | null;
  sourceType: string;
  serverInstanceId: string;
  nativeId: string;
  modifiedAt: string | null;
  fetchedAt: string | null;
  fields: unknown;
  metadata: unknown;
  relations: unknown;
  attachments: unknown;
  provenance: unknown;
}

/** `ResourceInput` with its JSON parts serialized (the caller decides what is unserializable). */
export type ResourceWrite = Omit<
  ResourceInput,
  "fields" | "metadata" | "relations" | "attachments" | "provenance"
> & {
  fields: string | null;
  metadata: string | null;
  relations: string | null;
  attachments: string | null;
  provenance: string | null;
};

export interface StoredResourceState {
  contentHash: string;
  deletedAt: string | null;
  /** Local time of the row's last write: a key written since a pass's intent was written by that pass. */
  updatedAt: string;
}

/**
 * A process that asks for and holds leases (docs/scaling-out.md#fencing): `id` is random per
 * process start (`hostname:pid` repeats across containers, where every process is pid 1), `name`
 * is `hostname:pid`, kept beside it for people.
 */
export interface LeaseHolder {
  id: string;
  name: string;
  /** Where `name`'s pid names this process (`lease-holder.ts`); null when unknown. */
  scope: string | null;
}

/**
 * The fencing token of one pass: the mirror, the holder's id and the epoch its lease had when the
 * pass took it. Every takeover increments the epoch, so a token outlives its lease only as a refusal.
 */
export interface Fence {
  mirror: string;
  holder: string;
  epoch: number;
}

/** A mirror's lease as the table holds it (`status` shows the live ones). */
export interface Lease extends Fence {
  holderName: string;
  holderScope: string | null;
  expiresAt: string;
  /** The length the holder asked for at its last renewal: `expiresAt` minus this is when it renewed. */
  leaseSeconds: number;
}

/** What `acquire` granted. */
export interface LeaseGrant {
  epoch: number;
  expiresAt: string;
  /** The database's clock when the lease was granted. */
  takenAt: string;
  /**
   * The lease this grant took from another holder that never released it (it stopped renewing, or
   * was known dead): a takeover. Null when the lease was free, released, or already this holder's.
   */
  tookOver: Lease | null;
}

/** The columns that come from an exported resource, `key` first (benchmarks and tests reuse it). */
export const RESOURCE_COLUMNS = [
  "key",
  "content_hash",
  "content_text",
  "content_format",
  "content_status",
  "title",
  "url",
  "type",
  "source_type",
  "server_instance_id",
  "native_id",
  "modified_at",
  "fetched_at",
  "fields",
  "metadata",
  "relations",
  "attachments",
  "provenance",
] as const;

/** Why a mirror's pass is due (docs/scaling-out.md#scheduling). */
export const DUE_REASONS = ["schedule", "catch-up", "requested"] as const;
export type DueReason = (typeof DUE_REASONS)[number];

/** A pass owed to a mirror and not started yet: the first replica with a free slot starts it. */
export interface Due {
  mode: Mode;
  reason: DueReason;
  /** When it became due: the scheduled time, or when it was requested. */
  since: string;
  /** Who requested it (`requested`), else null. */
  by: string | null;
}

/**
 * A mirror's schedule as the database keeps it, shared by every replica: the latest scheduled
 * time of each cron that a process recorded (so each one is recorded once), the pass due, and the
 * pause an operator set.
 */
export interface MirrorSchedule {
  mirror: string;
  incrementalSlot: string;
  fullSlot: string;
  due: Due | null;
  paused: { at: string; by: string } | null;
}

/** A live `syncmirror run` process, as its last heartbeat recorded it. */
export interface Replica {
  instanceId: string;
  /** `hostname:pid`. */
  name: string;
  startedAt: string;
  seenAt: string;
  /** Its heartbeat counts until then (the database's clock). */
  expiresAt: string;
  /** `max_concurrent_mirrors`, and how many passes it ran at its last heartbeat. */
  slots: number;
  running: number;
  /** The boot and pid namespace its pid is in (`LeaseHolder.scope`); null where it cannot be read. */
  scope: string | null;
}

export type ControlAction = "pause" | "resume" | "trigger";

/** An operator's control, kept for the history: what, on which mirror, by whom, when. */
export interface ControlRecord {
  id: number;
  mirror: string;
  action: ControlAction;
  /** The mode a trigger asked for; null for pause and resume. */
  mode: Mode | null;
  /** `user@host` from the CLI, `http <address>` from the HTTP API. */
  actor: string;
  at: string;
}
