/**
 * The error catalog. Every error syncmirror raises on purpose is one of these classes, with a
 * stable `code` to branch on and a message that says what to do next. Imports nothing.
 */

export abstract class SyncmirrorError extends Error {
  abstract readonly code: string;
  /** Whether retrying the same operation later may succeed (network, 429, 5xx). */
  readonly retryable: boolean = false;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** One problem in the config file: which file, which key path, what is wrong. */
export interface ConfigIssue {
  path: string;
  message: string;
}

/** Every issue on one line, each named by its key path. */
export function issuesLine(issues: readonly ConfigIssue[]): string {
  return issues.map((i) => `${i.path || "(root)"}: ${i.message}`).join("; ");
}

export class ConfigError extends SyncmirrorError {
  readonly code = "CONFIG_INVALID" as const;
  constructor(
    readonly file: string,
    readonly issues: readonly ConfigIssue[],
    options?: { cause?: unknown },
  ) {
    super(
      // One line however many issues: log collectors and `2>&1 | tail -1` keep all of it.
      `${file}: invalid config: ${issuesLine(issues)}`,
      options,
    );
  }
}

export class UsageError extends SyncmirrorError {
  readonly code = "USAGE" as const;
}

/** `syncmirror init` found a file where it would write the config: it never overwrites one. */
export class ConfigExistsError extends SyncmirrorError {
  readonly code = "CONFIG_EXISTS" as const;
  constructor(readonly file: string) {
    super(
      `${file} already exists and init never overwrites a file: edit it, remove it first, or name another file with --config FILE`,
    );
  }
}

/** Fields every error that comes from an HTTP exchange with the upstream API carries. */
export interface ApiErrorFields {
  method: string;
  /** Templated route, never with ids: `/sync-task/{sync_id}/export`. */
  route: string;
  status?: number;
  /** The response's `detail` (string or object), when there was one. */
  detail?: unknown;
}

export abstract class ApiError extends SyncmirrorError {
  readonly method: string;
  readonly route: string;
  readonly status: number | undefined;
  readonly detail: unknown;

  constructor(message: string, fields: ApiErrorFields, options?: { cause?: unknown }) {
    super(message, options);
    this.method = fields.method;
    this.route = fields.route;
    this.status = fields.status;
    this.detail = fields.detail;
  }
}

/** The token is missing, wrong or expired (401), or lacks rights (403 that is not the premium switch). */
export class UnauthorizedError extends ApiError {
  readonly code = "API_UNAUTHORIZED" as const;
}

/** Background sync (a premium feature) is turned off for the tenant. */
export class FeatureDisabledError extends ApiError {
  readonly code = "API_FEATURE_DISABLED" as const;
}

/** The trigger was answered 409: the service cannot start the sync now. */
export class CannotStartError extends ApiError {
  readonly code = "API_CANNOT_START" as const;
}

/** 400 or 422: the request was refused as invalid (for a trigger: nothing reachable, limits). */
export class BadRequestError extends ApiError {
  readonly code = "API_BAD_REQUEST" as const;
}

export class NotFoundError extends ApiError {
  readonly code = "API_NOT_FOUND" as const;
}

/** 409 other than a trigger refusal: export not finished yet, nothing to continue. */
export class ConflictError extends ApiError {
  readonly code = "API_CONFLICT" as const;
}

/** 409 on creating or replacing a sync config: another config of the project has that name. */
export class NameTakenError extends ApiError {
  readonly code = "API_NAME_TAKEN" as const;
}

/** 429, 5xx, a reset connection or a timeout, still failing after every attempt. */
export class UnavailableError extends ApiError {
  readonly code = "API_UNAVAILABLE" as const;
  override readonly retryable = true;
}

/**
 * A trigger (`POST /sync-task`, not idempotent) got no usable answer after it may have reached the
 * service (reset, timeout, a gateway 5xx, an unreadable 2xx body): runs may exist. Never retried
 * blindly: read the run list and adopt the runs it created (docs/reference/sync-semantics.md#one-trigger-per-mirror).
 */
export class TriggerOutcomeUnknownError extends ApiError {
  readonly code = "API_TRIGGER_OUTCOME_UNKNOWN" as const;
  /**
   * This process stopped waiting (a timeout) while the service may still be handling the POST: its
   * runs may show in the run list only later.
   */
  readonly abandoned: boolean;

  constructor(message: string, fields: ApiErrorFields, options?: { cause?: unknown; abandoned?: boolean }) {
    super(message, fields, options);
    this.abandoned = options?.abandoned ?? false;
  }
}

/**
 * A continue message (`POST /sync-task/{sync_id}/continue`) got no answer after it may have
 * reached the service: the source may be running again. Read the run before sending another.
 */
export class ContinueOutcomeUnknownError extends ApiError {
  readonly code = "API_CONTINUE_OUTCOME_UNKNOWN" as const;
}

/**
 * A sync config create (`POST /sync-configs`, not idempotent) got no usable answer after it may
 * have reached the service. Never repeated blindly: look the name up first (names are unique per
 * project, so a config found with it is the one this POST made).
 */
export class CreateOutcomeUnknownError extends ApiError {
  readonly code = "API_CREATE_OUTCOME_UNKNOWN" as const;
}

/** The body was not JSON, or not the shape docs/reference/upstream-api.md documents. */
export class BadResponseError extends ApiError {
  readonly code = "API_BAD_RESPONSE" as const;
}

/**
 * An export page whose schema_version major is not 1: nothing of it, nor of the pages after it, is
 * written. `offset` is that page's: the pages before it, read as version 1, were committed already.
 */
export class UnsupportedSchemaVersionError extends SyncmirrorError {
  readonly code = "EXPORT_SCHEMA_UNSUPPORTED" as const;
  constructor(
    readonly syncId: string,
    readonly schemaVersion: unknown,
    readonly offset = 0,
  ) {
    const version = JSON.stringify(schemaVersion);
    super(
      offset === 0
        ? `export of run ${syncId} has schema_version ${version}; this syncmirror reads major version 1 only. Upgrade syncmirror; nothing of this export was written.`
        : `export of run ${syncId} has schema_version ${version} from offset ${offset} on; this syncmirror reads major version 1 only. Upgrade syncmirror; nothing of this export from offset ${offset} on was written (the rows before it were read as version 1).`,
    );
  }
}

/** Another process holds the database. */
export class DatabaseLockedError extends SyncmirrorError {
  readonly code = "DB_LOCKED" as const;
  /** `advice`: what to do, for a command whose database is not database.path's (copy-store's --from). */
  constructor(
    readonly path: string,
    readonly holder: string,
    advice = "stop it first, or point this one at another database.path",
  ) {
    super(`database ${path} is in use by another syncmirror process (${holder}); ${advice}`);
  }
}

/**
 * `database.path` (or its lock file) cannot be created or opened: a missing or read-only parent,
 * a file where a directory should be, no permission, a filesystem that refuses new files.
 */
export class DatabasePathError extends SyncmirrorError {
  readonly code = "DB_PATH" as const;
  /** `advice`: what to do, for a command whose database is not database.path's (copy-store's --from). */
  constructor(
    readonly path: string,
    readonly reason: string,
    options?: { cause?: unknown; advice?: string },
  ) {
    super(
      `cannot use database ${path}: ${reason}. ${options?.advice ?? "Make it writable by this user, or point database.path elsewhere (missing directories are created)."}`,
      { cause: options?.cause },
    );
  }
}

/** The HTTP listener could not bind `http.listen` (port in use, address not on this host). */
export class ListenError extends SyncmirrorError {
  readonly code = "HTTP_LISTEN" as const;
}

/** The database cannot be opened or written (read-only file, full disk, corrupt file). */
export class DatabaseError extends SyncmirrorError {
  readonly code = "DB_ERROR" as const;
}

/**
 * The database server cannot be reached now (connection refused or timed out, server starting up):
 * not the config's fault, so the daemon stays unready and retries with backoff.
 */
export class DatabaseUnavailableError extends SyncmirrorError {
  readonly code = "DB_UNAVAILABLE" as const;
  override readonly retryable = true;
}

/**
 * The database refuses this configuration (wrong user or password, no such database, not a
 * postgres:// URL, a `database.path` file that is no SQLite database): nothing will change by
 * waiting, so the command exits 2 like a config error.
 */
export class DatabaseRefusedError extends SyncmirrorError {
  readonly code = "DB_REFUSED" as const;
}

/** The database holds migrations this binary does not know: a newer syncmirror wrote it. */
export class SchemaTooNewError extends SyncmirrorError {
  readonly code = "DB_SCHEMA_TOO_NEW" as const;
  constructor(
    readonly database: string,
    readonly databaseMigrations: number,
    readonly binaryMigrations: number,
    readonly binaryTag: string,
  ) {
    super(
      `${database} has ${databaseMigrations} schema migration(s) applied, newer than this syncmirror's ${binaryMigrations} (up to ${binaryTag}); upgrade syncmirror to the version that migrated it (never downgrade the binary against a migrated database)`,
    );
  }
}

/** `copy-store` found rows in the PostgreSQL database it was to fill: it copies into an empty one only. */
export class TargetNotEmptyError extends SyncmirrorError {
  readonly code = "COPY_TARGET_NOT_EMPTY" as const;
  constructor(
    readonly database: string,
    readonly tables: readonly { table: string; rows: number }[],
  ) {
    super(
      `${database} is not empty (${tables.map((t) => `${t.table}: ${t.rows} rows`).join(", ")}): copy-store fills an empty database only, so nothing was copied. Create a new database (createdb) and point database.url_env at it`,
    );
  }
}

/** The work was stopped by an AbortSignal (shutdown), or lost its lease (LeaseLostError). */
export class AbortedError extends SyncmirrorError {
  readonly code: "ABORTED" | "LEASE_LOST" = "ABORTED";
}

/**
 * The reader of stdout went away (`syncmirror changes ... | head -c 100`): the command stops as on
 * SIGTERM, cleans up and exits 0 without a word, as a pipeline's reader asked.
 */
export class OutputClosedError extends SyncmirrorError {
  readonly code = "OUTPUT_CLOSED" as const;
  constructor() {
    super("stdout was closed by its reader: stopped");
  }
}

/**
 * The pass's lease is no longer this process's (docs/scaling-out.md#fencing): another replica took it over, or
 * it expired while this process was paused or cut off. The pass stops, as on a shutdown, and the
 * holder of the lease resumes its trigger.
 */
export class LeaseLostError extends AbortedError {
  override readonly code = "LEASE_LOST" as const;
  constructor(
    readonly mirror: string,
    readonly epoch: number,
    why: string,
    options?: { cause?: unknown },
  ) {
    super(
      `the lease on mirror ${mirror} (epoch ${epoch}) is no longer this process's: ${why}; this pass stopped and commits nothing more; whichever process holds the lease next resumes the trigger if it is still in flight`,
      options,
    );
  }
}

/**
 * The one wording for a mirror name the config does not declare, whether it came as `--mirror`, a
 * `mirror=` parameter or a `/v1/mirrors/{name}` path: the name, where it was looked for, and the
 * names there are.
 */
export function unknownMirrorMessage(name: string, known: readonly string[], where = "the config"): string {
  return `no mirror named "${name}" in ${where} (known: ${known.join(", ")})`;
}

/** A search query FTS5 cannot parse; the message never carries SQLite's text. */
export class SearchQueryError extends SyncmirrorError {
  readonly code = "SEARCH_QUERY_INVALID" as const;
}

/** Search was asked for while `search.enabled` is false, or before its index was built. */
export class SearchUnavailableError extends SyncmirrorError {
  readonly code = "SEARCH_UNAVAILABLE" as const;
}

/**
 * A mirror declares its sync config (`sync_config`) but none has been applied for it yet, so there
 * is no config to trigger: `syncmirror apply` (or the daemon with `manage_sync_configs: true`).
 */
export class SyncConfigNotAppliedError extends SyncmirrorError {
  readonly code = "SYNC_CONFIG_NOT_APPLIED" as const;
  constructor(
    readonly mirror: string,
    readonly configName: string,
  ) {
    super(
      `mirror ${mirror} declares the sync config "${configName}", which has not been applied yet: run \`syncmirror apply\` (or set manage_sync_configs: true and let the daemon apply it)`,
    );
  }
}

/** `approve-sweep` for a mirror with no sweep held by the mass-delete guard: nothing to approve. */
export class NothingHeldError extends SyncmirrorError {
  readonly code = "NOTHING_HELD" as const;
  constructor(readonly mirror: string) {
    super(
      `mirror ${mirror} has no held sweep to approve (no held_sweep problem is open): nothing was approved; \`syncmirror problems --mirror ${mirror}\` lists what is open`,
    );
  }
}

/** `forget` for a mirror whose lease another process holds: its pass runs there, nothing is revoked under it. */
export class MirrorBusyError extends SyncmirrorError {
  readonly code = "MIRROR_BUSY" as const;
  constructor(
    readonly mirror: string,
    readonly holder: string | null,
  ) {
    super(
      `mirror ${mirror} is held by another syncmirror process (${holder ?? "unknown"}), which runs its pass there: nothing was revoked; run the command again once that pass ends (\`syncmirror status\` shows the holder)`,
    );
  }
}
