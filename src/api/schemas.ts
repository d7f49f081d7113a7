/**
 * Response schemas for the upstream API (docs/reference/upstream-api.md). Tolerant of unknown fields (zod strips them),
 * strict on what syncmirror relies on. Inferred types are the domain types the sync logic uses.
 */
import { z } from "zod";

const nullableString = z.string().nullable().optional();

/** `detail` may be a string or an object; kept as-is. */
export const ErrorBody = z.object({ detail: z.unknown().optional() });

export const SourceTaskStatus = z.enum(["PENDING", "RUNNING", "COMPLETED", "INCOMPLETE", "FAILED"]);
export type SourceTaskStatus = z.infer<typeof SourceTaskStatus>;

export const RunStatus = z.enum(["pending", "running", "completed", "incomplete", "failed"]);
export type RunStatus = z.infer<typeof RunStatus>;

/** The statuses a run ends in (docs/reference/metrics.md: `syncmirror_runs_total` serves each at 0). */
export const FINISHED_RUNS = ["completed", "incomplete", "failed"] as const satisfies readonly RunStatus[];
export const FINISHED_RUN_STATUSES: ReadonlySet<RunStatus> = new Set(FINISHED_RUNS);

/** Export source status; kept open-ended so a new status upstream is recorded, not fatal. */
export const ExportSourceStatus = z.string();
/** The export source statuses the service documents; others are recorded as they come. */
export const EXPORT_SOURCE_STATUSES = [
  "ok",
  "no_results",
  "authentication_required",
  "degraded",
  "config_stale",
] as const;
export type ExportSourceStatus = z.infer<typeof ExportSourceStatus>;

export const Counts = z.object({
  resources_seen: z.number().optional(),
  included: z.number().optional(),
  exported: z.number().optional(),
  excluded: z.number().optional(),
  undecided: z.number().optional(),
  unresolved: z.number().optional(),
  unmatched_tool_calls: z.number().optional(),
  skipped_unchanged: z.number().optional(),
  content_fetch_failed: z.number().optional(),
});

export const Diagnostics = z.object({
  degraded: z.boolean().optional(),
  degraded_reasons: z.array(z.unknown()).optional(),
});

// --- sync configs -----------------------------------------------------------------------------

export const SyncConfigServer = z.object({
  server_instance_id: z.string(),
  server_name: nullableString,
  display_name: nullableString,
  source_type: z.string(),
  available: z.boolean().optional(),
});

/** What `plan` compares with the file: name, instructions, servers and users are relied on. */
export const SyncConfig = z.object({
  id: z.string(),
  project_id: z.string().optional(),
  name: z.string(),
  instructions: z.string(),
  all_users: z.boolean().optional().default(false),
  user_emails: z
    .array(z.string())
    .nullable()
    .optional()
    .transform((emails) => emails ?? []),
  servers: z.array(SyncConfigServer).optional().default([]),
});
export type SyncConfig = z.infer<typeof SyncConfig>;

export const PageMeta = z.object({
  next_cursor: z.string().nullable().optional(),
  has_next: z.boolean().optional(),
  total: z.number().optional(),
  size: z.number().optional(),
});

/**
 * An item of the config list, whose shape the API leaves open (a read is what documents a config):
 * only what finds a config is required; what it holds is read with `GET /sync-configs/{id}`.
 */
export const SyncConfigListItem = z.object({
  id: z.string(),
  name: z.string(),
});
export type SyncConfigListItem = z.infer<typeof SyncConfigListItem>;

export const SyncConfigPage = z.object({
  items: z.array(SyncConfigListItem),
  meta: PageMeta,
});
export type SyncConfigPage = z.infer<typeof SyncConfigPage>;

export const AccessServer = z.object({
  server_instance_id: z.string(),
  auth_status: z.string(),
  accessible: z.boolean(),
});

/**
 * `servers` is required: a server the check does not list for a project user counts as removed from
 * the sync config, so a user read without the list would lose every pair's access.
 */
export const AccessItem = z.object({
  user_email: z.string(),
  project_user: z.boolean(),
  servers: z.array(AccessServer),
});
export type AccessItem = z.infer<typeof AccessItem>;

export const AccessPage = z.object({
  items: z.array(AccessItem),
  meta: PageMeta,
});
export type AccessPage = z.infer<typeof AccessPage>;

export const SyncableSource = z.object({
  server_instance_id: z.string(),
  server_name: nullableString,
  display_name: nullableString,
  source_type: z.string(),
  rules_version: z.unknown().optional(),
});
export type SyncableSource = z.infer<typeof SyncableSource>;
export const SyncableSources = z.object({ sources: z.array(SyncableSource) });

export const Project = z.object({ id: z.string(), name: z.string().optional() });
export type Project = z.infer<typeof Project>;
export const Projects = z.array(Project);

// --- trigger ----------------------------------------------------------------------------------

export const TriggerSource = z.object({
  source: z.string(),
  source_type: z.string(),
  server_name: nullableString,
  server_instance_id: z.string(),
  task_id: nullableString,
});

export const TriggerRun = z.object({
  sync_id: z.string(),
  user_email: z.string(),
  sources: z.array(TriggerSource).default([]),
});

export const SkipReason = z.string();

export const SkippedPair = z.object({
  user_email: z.string(),
  server_instance_id: z.string(),
  server_name: nullableString,
  reason: SkipReason,
  auth_status: nullableString,
});
export type SkippedPair = z.infer<typeof SkippedPair>;

/**
 * `skipped` and `skipped_count` together say whether the skipped list is complete, and only a
 * complete list decides who left the project: `sync/trigger.ts` reads an answer lacking either as
 * an unknown list, for the access check to decide, never as an empty or whole one.
 */
export const TriggerResponse = z.object({
  trigger_id: z.string(),
  sync_config_id: z.string(),
  since: z.string().nullable().optional(),
  runs: z.array(TriggerRun),
  skipped: z.array(SkippedPair).optional(),
  skipped_count: z.number().int().nonnegative().optional(),
});
export type TriggerResponse = z.infer<typeof TriggerResponse>;

// --- runs -------------------------------------------------------------------------------------

export const RunListSource = z.object({
  source: z.string(),
  source_type: z.string(),
  server_name: nullableString,
  server_instance_id: z.string(),
  task_id: nullableString,
  status: SourceTaskStatus,
});
export type RunListSource = z.infer<typeof RunListSource>;

export const RunListItem = z.object({
  sync_id: z.string(),
  sync_config_id: z.string(),
  trigger_id: z.string(),
  user_email: z.string(),
  status: RunStatus,
  since: z.string().nullable().optional(),
  created_at: z.string(),
  sources: z.array(RunListSource).default([]),
});
export type RunListItem = z.infer<typeof RunListItem>;

export const RunListPage = z.object({
  items: z.array(RunListItem),
  meta: PageMeta,
});
export type RunListPage = z.infer<typeof RunListPage>;

export const RunSourceSummary = z.object({
  status: ExportSourceStatus.optional(),
  counts: Counts.optional(),
  diagnostics: Diagnostics.optional(),
});

/**
 * A source's `error` as text. The API gives its type nowhere (its example writes a string, its
 * error bodies' `detail` is a string or an object): an object is kept by its `message`, or whole
 * as JSON, rather than refusing the run's detail (which the continue and the problems read).
 */
const SourceError = z
  .unknown()
  .optional()
  .transform((error): string | null => {
    if (error === undefined || error === null) return null;
    if (typeof error === "string") return error;
    const message = (error as { message?: unknown }).message;
    return typeof message === "string" ? message : JSON.stringify(error);
  });

export const RunDetailSource = RunListSource.extend({
  error: SourceError,
  started_at: nullableString,
  completed_at: nullableString,
  session_id: nullableString,
  summary: RunSourceSummary.nullable().optional(),
});

export const RunDetail = RunListItem.extend({
  sources: z.array(RunDetailSource).default([]),
});
export type RunDetail = z.infer<typeof RunDetail>;

// --- export -----------------------------------------------------------------------------------

export const ExportSource = z.object({
  source: z.string(),
  source_type: z.string(),
  server_name: nullableString,
  server_instance_id: z.string(),
  task_id: nullableString,
  session_id: nullableString,
  task_status: SourceTaskStatus,
  status: ExportSourceStatus,
  counts: Counts.optional(),
  config_warnings: z.array(z.unknown()).optional(),
  diagnostics: Diagnostics.optional(),
});
export type ExportSource = z.infer<typeof ExportSource>;

export const Resource = z.object({
  key: z.string().min(1),
  source: z.string(),
  source_type: z.string(),
  server_instance_id: z.string(),
  // The API types it nowhere and some servers' ids are numbers (an issue's): kept as text, as the key holds it.
  native_id: z.union([z.string(), z.number().transform(String)]),
  type: z.string().nullable().optional(),
  title: z.string().nullable().optional(),
  url: z.string().nullable().optional(),
  modified_at: z.string().nullable().optional(),
  fetched_at: z.string().nullable().optional(),
  content: z
    .object({ format: z.string().nullable().optional(), text: z.string().nullable().optional() })
    .nullable()
    .optional(),
  content_status: z.string().nullable().optional(),
  fields: z.unknown().optional(),
  metadata: z.unknown().optional(),
  relations: z.unknown().optional(),
  attachments: z.unknown().optional(),
  content_hash: z.string().min(1),
  provenance: z.unknown().optional(),
});
export type Resource = z.infer<typeof Resource>;

/** `1`, `"1"`, `"1.0"`: read; the major version is checked by the sync, not here. */
export const SchemaVersion = z.union([z.number(), z.string()]);

export const ExportPage = z.object({
  schema_version: SchemaVersion,
  engine_version: z.union([z.number(), z.string()]).nullable().optional(),
  sync_id: z.string(),
  since: z.string().nullable().optional(),
  sources: z.array(ExportSource).default([]),
  resources: z.array(z.unknown()),
  excluded: z.array(z.unknown()).optional(),
  undecided: z.array(z.unknown()).optional(),
  unresolved_requests: z.array(z.unknown()).optional(),
  unmatched_tool_calls: z.array(z.unknown()).optional(),
  page: z.object({
    offset: z.number(),
    limit: z.number().optional(),
    total: z.number().optional(),
    next_offset: z.number().nullable(),
  }),
});
/**
 * Resources are validated one by one by the ingest (`Resource.safeParse`), so a single malformed
 * resource is rejected with a reason instead of failing the page.
 */
export type ExportPage = z.infer<typeof ExportPage>;

/** 409 body of an export that is not ready: each source's task status. */
export const ExportNotReadyDetail = z.object({
  message: z.string().optional(),
  sources: z.array(z.object({ source: z.string(), status: z.string() })).optional(),
});
export type ExportNotReadyDetail = z.infer<typeof ExportNotReadyDetail>;

export const TranscriptMessage = z.object({
  sequence_number: z.number(),
  role: z.string().nullable().optional(),
  message_type: z.string().nullable().optional(),
  content: z.unknown(),
  created_at: z.string().nullable().optional(),
});

export const TranscriptPage = z.object({
  task_id: z.string().nullable().optional(),
  status: z.string().nullable().optional(),
  messages: z.array(TranscriptMessage),
  next_cursor: z.string().nullable().optional(),
  has_more: z.boolean().optional(),
});
export type TranscriptPage = z.infer<typeof TranscriptPage>;
