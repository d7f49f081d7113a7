/**
 * The config file (docs/configuration.md): YAML, validated with zod, frozen. The only reader of the
 * environment: the token comes from the variable named by `api.token_env`, never from the file.
 */
import { readFileSync } from "node:fs";
import { isMap, isNode, isScalar, isSeq, LineCounter, parseDocument } from "yaml";
import { z } from "zod";
import { cronExpression } from "./config-cron.js";
import {
  type DatabaseConfig,
  DatabaseSection,
  envName,
  freezeDatabase,
  requireDatabaseEnvironment,
} from "./config-database.js";
import { freezeHttp, HTTP_LISTEN_ENV, type HttpConfig, HttpSection } from "./config-http.js";
import { findPlaceholders } from "./config-placeholders.js";
import {
  DEFAULT_TOKEN_ENV,
  findSecrets,
  formatPath,
  tokenFromEnv,
  unsendableToken,
} from "./config-secrets.js";
import * as declaring from "./config-sync-config.js";
import { ConfigError, type ConfigIssue, UsageError } from "./errors.js";

export { type DatabaseConfig, requireDatabaseUrl } from "./config-database.js";

export const DEFAULT_CONFIG_PATH = "config/syncmirror.yaml";
/** The variable naming the config file when `--config` is not given. */
export const CONFIG_PATH_ENV = "SYNCMIRROR_CONFIG";
/** The variable holding the log level. */
export const LOG_LEVEL_ENV = "LOG_LEVEL";
/** Enough to hide a 100 ms round trip behind the service's and the mirror's own work per page. */
const DEFAULT_PAGES_AHEAD_PER_RUN = 4;
/** Pages fetched ahead wait parsed in memory (a few MB each): this bounds them for the whole pass. */
const DEFAULT_PAGES_AHEAD_PER_PASS = 4;
/**
 * Resources asked for per export page (the service allows up to 500). A page is parsed, validated
 * and written as one piece, so its size sets the process's working set: at 250 a cold pass of 100k
 * rows with the container's settings peaked 14 MB lower than at 500, and one of 20k rows with
 * Node's defaults used 7% less CPU (less garbage promoted); below 250 the per-page costs (a
 * request, a transaction, a commit) win (bench/RESULTS.md, issue 10).
 */
export const DEFAULT_EXPORT_PAGE_SIZE = 250;
/** The service's own limit on `limit`. */
const MAX_EXPORT_PAGE_SIZE = 500;
/** How long `history` and `/v1/passes` keep a finished pass (docs/console-history.md). */
export const DEFAULT_HISTORY_KEEP_DAYS = 90;

const timezone = z
  .string()
  .refine(isTimeZone, { message: "is not an IANA time zone (e.g. UTC, Europe/Berlin)" });
const positive = z.number().positive();
const nonNegativeInt = z.number().int().nonnegative();
/** Node's timers hold at most 2^31 - 1 ms: a longer one fires at once, and so would every wait set by it. */
const MAX_TIMER_SECONDS = Math.floor((2 ** 31 - 1) / 1000);
const timerSeconds = positive.max(
  MAX_TIMER_SECONDS,
  `must be at most ${MAX_TIMER_SECONDS} (about 24 days, the longest wait a timer holds)`,
);
/** Subtracted from a watermark: far past this, the date it makes cannot be written. */
const MAX_SINCE_OVERLAP_SECONDS = 365 * 24 * 3600;
/** Subtracted from now: far past this, the date it makes cannot be written. */
const MAX_HISTORY_KEEP_DAYS = 100 * 365;

/**
 * Every setting that may appear in `defaults` and be overridden per mirror, with its validator and
 * its default: the one place such a setting is declared. `MirrorConfig` and `freeze` derive from it.
 */
const SCHEDULE = {
  incremental_cron: cronExpression
    .default("*/15 * * * *")
    .describe(
      "When to run an incremental pass (only what changed since the oldest active watermark): a cron expression of 5 fields (6 with seconds first), read in `timezone`.",
    ),
  full_cron: cronExpression.default("0 3 * * *").meta({
    description:
      "When to run a full snapshot, the only pass that revokes access and deletes. When both expressions fall at the same time the full pass runs and covers the incremental one; a time that fell while no daemon ran is run once at start-up (the latest one only, so it looks back one period of the expression: a day for a daily one; see docs/scaling-out.md#catch-up-at-start-up).",
    examples: ["0 2 * * 0"],
  }),
  timezone: timezone.default("UTC").meta({
    description:
      "IANA time zone the cron expressions are read in. Across a daylight-saving change every local time an expression names runs once: one the clocks skip (02:30 when they jump from 02:00 to 03:00) runs at the jump, one they show twice runs at the first.",
    examples: ["Europe/Berlin"],
  }),
  since_overlap_seconds: nonNegativeInt
    .max(MAX_SINCE_OVERLAP_SECONDS, `must be at most ${MAX_SINCE_OVERLAP_SECONDS} (a year)`)
    .default(300)
    .describe(
      "Seconds subtracted from the oldest active watermark to make the `since` of an incremental pass, so nothing at the boundary is missed.",
    ),
  poll_initial_seconds: timerSeconds
    .default(5)
    .describe(
      "First wait between two polls of the upstream runs; it grows up to `poll_max_seconds`. May be fractional. Replicas also look for orphaned triggers this often (at least every 250 ms).",
    ),
  poll_max_seconds: timerSeconds
    .default(60)
    .describe(
      "Longest wait between two polls of the upstream runs: at least `poll_initial_seconds` (less is a config error), in `defaults` and in every mirror once its overrides apply.",
    ),
  run_timeout_minutes: positive
    .default(240)
    .describe("Runs still unfinished this long after the trigger are given up and the trigger closed."),
  continue_incomplete: nonNegativeInt
    .default(0)
    .describe("Follow-up messages sent to a source that ended INCOMPLETE before giving up on it (0: none)."),
  continue_message: z
    .string()
    .min(1)
    .max(50_000)
    .default("Continue where you stopped and finish the task.")
    .describe("The follow-up message sent to an INCOMPLETE source (at most 50,000 characters)."),
  delete_after_missed_full: z
    .number()
    .int()
    .min(1)
    .default(1)
    .describe(
      "Full snapshots in a row a key must be missing from before the pair loses access to it (any sighting resets the count).",
    ),
  max_delete_fraction: z
    .number()
    .min(0)
    .max(1)
    .default(0.5)
    .meta({
      description:
        "A sweep that would revoke more than this share of a pair's keys (and more than 10 keys) is held: nothing of it is revoked until `syncmirror approve-sweep` lets the next full pass apply it, or `sync --full --allow-mass-delete` applies it.",
      examples: [0.25],
    }),
  inaccessible_grace_hours: z
    .number()
    .nonnegative()
    .default(72)
    .describe(
      "How long a pair skipped as `not_accessible` or `not_syncable` keeps its access; also how far a pair's watermark may fall behind the mirror's newest before it stops holding `since` back.",
    ),
};

type ScheduleKey = keyof typeof SCHEDULE;
type Schedule = { [K in ScheduleKey]: z.output<(typeof SCHEDULE)[K]> };
type CamelCase<S extends string> = S extends `${infer H}_${infer T}` ? `${H}${Capitalize<CamelCase<T>>}` : S;

/** The same validators without their defaults: a mirror overrides only what it names. */
const overrides = Object.fromEntries(
  Object.entries(SCHEDULE).map(([key, schema]) => [key, schema.unwrap().optional()]),
) as { [K in ScheduleKey]: z.ZodOptional<ReturnType<(typeof SCHEDULE)[K]["unwrap"]>> };

const Defaults = z.strictObject(SCHEDULE);

const Mirror = z
  .strictObject(overrides)
  .extend(declaring.MIRROR_IDENTITY)
  .refine(...declaring.ONE_SOURCE);

const FileKeys = z.strictObject({
  api: z
    .strictObject({
      base_url: z
        .url({
          protocol: /^https?$/,
          error: (issue) =>
            issue.code === "invalid_format" ? baseUrlProblem(String(issue.input)) : undefined,
        })
        .refine(isPlainBaseUrl, {
          message:
            "must not carry a user name, a query string or a fragment: the API's paths are appended to it, and the token is read only from the environment variable named by api.token_env",
        })
        .meta({
          description: "Base URL of the upstream service's API, including its version prefix `/api/v1`.",
          examples: ["https://api.example.com/api/v1"],
        }),
      token_env: envName
        .default(DEFAULT_TOKEN_ENV)
        .describe(
          "Name of the environment variable holding the platform access token. The token itself is never read from the file: a token written in it is a config error that names the key, never the value.",
        ),
      timeout_seconds: timerSeconds
        .default(60)
        .describe("Timeout of one request to the service, in seconds."),
      max_attempts: z
        .number()
        .int()
        .min(1)
        .max(20)
        .default(6)
        .describe(
          "Attempts per request; 429, 5xx and network errors are retried with exponential backoff (a trigger whose answer was lost is never re-sent blindly).",
        ),
    })
    .describe("The upstream service syncmirror reads from."),
  database: DatabaseSection,
  http: HttpSection.default(HttpSection.parse({})),
  search: z
    .strictObject({
      enabled: z
        .boolean()
        .default(false)
        .meta({
          description:
            "Keep a full-text index of titles and content for `syncmirror search` and `GET /v1/search`. Costs disk and ingest time; turning it off drops the index at the next start, turning it on builds it from the live resources.",
          examples: [true],
        }),
    })
    .default({ enabled: false })
    .describe("ACL-aware full-text search."),
  max_concurrent_mirrors: z
    .number()
    .int()
    .min(1)
    .default(2)
    .describe("Mirrors one process runs a pass for at the same time; the other due passes wait for a slot."),
  export: z
    .strictObject({
      pages_ahead_per_run: z
        .number()
        .int()
        .min(0)
        .max(64)
        .default(DEFAULT_PAGES_AHEAD_PER_RUN)
        .describe(
          "Export pages one run may fetch ahead of the page it applies next (0: one page at a time). Pages are still applied and checkpointed one at a time, in order.",
        ),
      pages_ahead_per_pass: z
        .number()
        .int()
        .min(0)
        .max(256)
        .default(DEFAULT_PAGES_AHEAD_PER_PASS)
        .describe(
          "Export pages fetched ahead across all runs of one pass. Each waits parsed in memory until applied, so this bounds the memory paging takes: a pass never holds more than max(4, this + 1) pages. A 429 halves the window; answered pages grow it back.",
        ),
      page_size: z
        .number()
        .int()
        .min(1)
        .max(MAX_EXPORT_PAGE_SIZE)
        .default(DEFAULT_EXPORT_PAGE_SIZE)
        .describe(
          "Resources asked for per export page (at most 500, the service's limit). A page is parsed, validated and written as one piece, so this sets the working set: lower it for documents of many MB.",
        ),
    })
    .describe("How export pages are fetched.")
    .default({
      pages_ahead_per_run: DEFAULT_PAGES_AHEAD_PER_RUN,
      pages_ahead_per_pass: DEFAULT_PAGES_AHEAD_PER_PASS,
      page_size: DEFAULT_EXPORT_PAGE_SIZE,
    }),
  defaults: Defaults.default(Defaults.parse({})).describe(
    "Schedule and sync settings for every mirror; each may be overridden in a mirror's own entry.",
  ),
  history: z
    .strictObject({
      keep_days: positive
        .max(MAX_HISTORY_KEEP_DAYS, `must be at most ${MAX_HISTORY_KEEP_DAYS} (100 years)`)
        .default(DEFAULT_HISTORY_KEEP_DAYS)
        .describe(
          "Days a finished pass is kept for `syncmirror history` and `GET /v1/passes`; the daemon prunes older ones at start-up and every hour, and `sync` after its passes (never a pass in flight, nor one the sync still reads).",
        ),
    })
    .default({ keep_days: DEFAULT_HISTORY_KEEP_DAYS })
    .describe("The pass history."),
  manage_sync_configs: z
    .boolean()
    .default(false)
    .describe(
      "true: the daemon applies the sync configs declared in `mirrors[].sync_config` at start-up, and before each pass the mirror's declaration as the file holds it then, when it differs from the one applied (the rest of the file is read at start-up only); false: only `syncmirror apply` does.",
    ),
  mirrors: z
    .array(Mirror)
    .min(1, "list at least one mirror")
    .superRefine(declaring.checkMirrorIdentities)
    .describe(
      "The mirrors: each names the upstream sync config it mirrors (`sync_config_id`) or declares it (`sync_config`), and may override any key of `defaults`.",
    ),
});

/** The file: its keys, and the rules that tie two of them together. */
const File = FileKeys.superRefine(checkPolling);

type PollSettings = { poll_initial_seconds?: number | undefined; poll_max_seconds?: number | undefined };

/**
 * The wait between two polls grows from `poll_initial_seconds` up to `poll_max_seconds`: a maximum
 * below the first wait is a slip the operator wants named, not one to quietly correct. Checked
 * where the two meet: in `defaults`, and in each mirror that overrides either, against the value it
 * inherits; the issue lands on the key the mirror set, and names the other key where it was set.
 */
function checkPolling(
  data: { defaults: Required<PollSettings>; mirrors: readonly PollSettings[] },
  ctx: z.RefinementCtx,
): void {
  const hint =
    "the wait between polls grows from poll_initial_seconds up to poll_max_seconds: raise poll_max_seconds or lower poll_initial_seconds";
  const d = data.defaults;
  if (d.poll_max_seconds < d.poll_initial_seconds)
    ctx.addIssue({
      code: "custom",
      path: ["defaults", "poll_max_seconds"],
      message: `${d.poll_max_seconds} is less than defaults.poll_initial_seconds (${d.poll_initial_seconds}): ${hint}`,
    });
  data.mirrors.forEach((m, i) => {
    if (m.poll_initial_seconds === undefined && m.poll_max_seconds === undefined) return;
    const initial = m.poll_initial_seconds ?? d.poll_initial_seconds;
    const max = m.poll_max_seconds ?? d.poll_max_seconds;
    if (max >= initial) return;
    const initialFrom = m.poll_initial_seconds === undefined ? "defaults" : `mirrors[${i}]`;
    ctx.addIssue(
      m.poll_max_seconds === undefined
        ? {
            code: "custom",
            path: ["mirrors", i, "poll_initial_seconds"],
            message: `${initial} is more than defaults.poll_max_seconds (${max}): ${hint}`,
          }
        : {
            code: "custom",
            path: ["mirrors", i, "poll_max_seconds"],
            message: `${max} is less than ${initialFrom}.poll_initial_seconds (${initial}): ${hint}`,
          },
    );
  });
}

/**
 * One mirror with every default resolved: `SCHEDULE`'s keys in camelCase, plus its identity:
 * exactly one of `syncConfigId` and `declared` (whose id `sync-configs/bind.ts` finds).
 */
export type MirrorConfig = {
  readonly name: string;
  readonly syncConfigId: string | null;
  readonly declared: declaring.DeclaredSyncConfig | null;
} & {
  readonly [K in ScheduleKey as CamelCase<K>]: Schedule[K];
};

export interface Config {
  readonly file: string;
  readonly api: {
    readonly baseUrl: string;
    readonly tokenEnv: string;
    /** From the environment; undefined when the variable is unset or empty (see `requireToken`). */
    readonly token: string | undefined;
    readonly tokenSetButEmpty: boolean;
    readonly timeoutSeconds: number;
    readonly maxAttempts: number;
  };
  readonly database: DatabaseConfig;
  readonly http: HttpConfig;
  /** The FTS5 index behind `search` and `/v1/search`, maintained by triggers when enabled. */
  readonly search: { readonly enabled: boolean };
  readonly maxConcurrentMirrors: number;
  /** Export pages fetched ahead of the page a run needs next: per run, and across a pass's runs. */
  readonly export: {
    readonly pagesAheadPerRun: number;
    readonly pagesAheadPerPass: number;
    readonly pageSize: number;
  };
  readonly mirrors: readonly MirrorConfig[];
  /** `history.keep_days`: finished passes older than this are pruned by the daemon and `sync` (`console/prune-history.ts`). */
  readonly history: { readonly keepDays: number };
  /** `manage_sync_configs`: the daemon applies the declared sync configs itself. */
  readonly manageSyncConfigs: boolean;
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * The config path: `--config`, else `$SYNCMIRROR_CONFIG`, else `config/syncmirror.yaml`. An empty
 * variable (`SYNCMIRROR_CONFIG=`) counts as unset, as a shell user means it. An empty `--config`
 * (`--config "$UNSET"`) is a UsageError: it names no file, and reading "" would only report a
 * config error about a file with no name.
 */
export function resolveConfigPath(flag: string | undefined, env: Env): string {
  if (flag === "")
    throw new UsageError(
      `--config: is empty: give the config file's path, or leave --config out to use $${CONFIG_PATH_ENV}, then ${DEFAULT_CONFIG_PATH}`,
    );
  return flag ?? (env[CONFIG_PATH_ENV] || DEFAULT_CONFIG_PATH);
}

/** Reads, validates and freezes the config. Throws ConfigError naming the file and key paths. */
export function loadConfig(file: string, env: Env): Config {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (cause) {
    const missing = (cause as NodeJS.ErrnoException).code === "ENOENT";
    const message = missing
      ? `no such file: write one with syncmirror init (--simulator URL against the simulator), copy config/syncmirror.example.yaml there, or name another file with --config FILE or $SYNCMIRROR_CONFIG`
      : `cannot read the file (${(cause as Error).message})`;
    throw new ConfigError(file, [{ path: "", message }], { cause });
  }
  return parseConfig(file, text, env);
}

export function parseConfig(file: string, text: string, env: Env): Config {
  const lines = new LineCounter();
  const doc = parseDocument(text, { uniqueKeys: true, lineCounter: lines });
  if (doc.errors.length > 0) {
    const duplicates = doc.errors.some((e) => e.code === "DUPLICATE_KEY")
      ? findDuplicateKeys(parseDocument(text, { uniqueKeys: false }).contents, [], lines, env)
      : [];
    throw new ConfigError(file, [
      ...doc.errors
        .filter((e) => e.code !== "DUPLICATE_KEY")
        .map((e) => ({
          path: "",
          // yaml's own words point at its JavaScript API, which the operator has no use for.
          message: yamlMessage(
            e.code === "MULTIPLE_DOCS"
              ? "the file holds more than one YAML document: remove the `---` line and what follows it, or merge the documents into one"
              : e.message,
            e.linePos?.[0],
          ),
        })),
      ...duplicates,
    ]);
  }
  let raw: unknown;
  try {
    raw = doc.toJS() ?? {};
  } catch (error) {
    // An alias whose anchor is missing or that expands too far is found only here, as a plain throw.
    throw new ConfigError(file, [{ path: "", message: yamlMessage((error as Error).message, undefined) }]);
  }
  const cycle = findCycle(raw, []);
  if (cycle) {
    throw new ConfigError(file, [
      {
        path: formatPath(cycle),
        message: "YAML: an alias inside its own anchor makes the value hold itself: write the value out here",
      },
    ]);
  }
  dropEmptyKeysWithDefaults(raw);
  const secretIssues = findSecrets(raw, env);
  if (secretIssues.length > 0) throw new ConfigError(file, secretIssues);
  const placeholders = findPlaceholders(raw);
  if (placeholders.length > 0) throw new ConfigError(file, placeholders);
  const parsed = File.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(file, parsed.error.issues.flatMap(configIssues));
  }
  return freeze(file, parsed.data, env);
}

/**
 * Each key written twice in one mapping, by its path (two `defaults:` sections, a key repeated in
 * one): yaml names only the line of the second. A key that is itself a secret is named by the
 * mapping that holds it, as `findSecrets` does.
 */
function findDuplicateKeys(
  node: unknown,
  path: (string | number)[],
  lines: LineCounter,
  env: Env,
): ConfigIssue[] {
  if (isSeq(node)) return node.items.flatMap((item, i) => findDuplicateKeys(item, [...path, i], lines, env));
  if (!isMap(node)) return [];
  const issues: ConfigIssue[] = [];
  const firstLine = new Map<string, number>();
  for (const pair of node.items) {
    const key = String(isScalar(pair.key) ? pair.key.value : pair.key);
    const line = lines.linePos((isNode(pair.key) && pair.key.range?.[0]) || 0).line;
    const first = firstLine.get(key);
    const secret = findSecrets({ [key]: null }, env).length > 0;
    if (first === undefined) {
      firstLine.set(key, line);
      // Below a secret key, every path would print it; findSecrets names it once the file parses.
      if (!secret) issues.push(...findDuplicateKeys(pair.value, [...path, key], lines, env));
      continue;
    }
    issues.push({
      path: formatPath(secret ? path : [...path, key]),
      message: `YAML: ${secret ? "a key" : "the key"} is written twice in one mapping (${first === line ? `on line ${line}` : `lines ${first} and ${line}`}): keep one`,
    });
  }
  return issues;
}

/**
 * The path of a value that holds one of its own ancestors (`&m {again: *m}`), or undefined: yaml
 * builds such a value as a cycle, which every walk of the file would follow until the stack ran out.
 */
function findCycle(
  value: unknown,
  path: (string | number)[],
  ancestors: Set<object> = new Set(),
): (string | number)[] | undefined {
  if (value === null || typeof value !== "object") return undefined;
  if (ancestors.has(value)) return path;
  ancestors.add(value);
  const entries: [string | number, unknown][] = Array.isArray(value)
    ? [...value.entries()]
    : Object.entries(value);
  for (const [key, child] of entries) {
    const found = findCycle(child, [...path, key], ancestors);
    if (found) return found;
  }
  ancestors.delete(value);
  return undefined;
}

/**
 * A top-level key with nothing under it (`http:` with every line below commented out) is null in
 * YAML; where the key has a default, that is what the operator left it at. A key that must be
 * given (`api:`) stays null and is reported as empty.
 */
function dropEmptyKeysWithDefaults(raw: unknown): void {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return;
  const doc = raw as Record<string, unknown>;
  const shape = FileKeys.shape as Record<string, z.ZodType | undefined>;
  for (const [key, value] of Object.entries(doc)) {
    if (value === null && shape[key]?.safeParse(undefined).success) delete doc[key];
  }
}

/**
 * zod reports the unknown keys of a section as one issue on the section ("defaults: Unrecognized
 * keys: ..."); each is named here by its own path (`defaults.incremental_crn`), the key to find
 * and fix in the file.
 */
function configIssues(issue: z.core.$ZodIssue): { path: string; message: string }[] {
  if (issue.code === "unrecognized_keys")
    return issue.keys.map((key) => ({
      path: formatPath([...issue.path, key]),
      message:
        "is not a known key: check its spelling and section against docs/configuration.md, or remove it",
    }));
  return [{ path: formatPath(issue.path), message: issueMessage(issue) }];
}

/**
 * zod says "Invalid input: expected string, received undefined" for a key left out, and "expected
 * int, received number" for a fraction.
 */
function issueMessage(issue: z.core.$ZodIssue): string {
  if (issue.code !== "invalid_type") return issue.message;
  // A list, a bare string or a binary file where the config's sections belong.
  if (issue.path.length === 0)
    return `the file holds ${issue.message.replace(/^.*received /, "a YAML ")}, not the config's sections (api:, mirrors:, ...): write it as config/syncmirror.example.yaml shows, or run syncmirror init`;
  if (issue.expected === "int") return "must be a whole number, not a fraction";
  if (/received undefined$/.test(issue.message)) return `is required (expected ${issue.expected})`;
  // `api:` with nothing under it is null in YAML.
  if (/received null$/.test(issue.message)) return `is empty (expected ${issue.expected})`;
  return issue.message;
}

/** pino's level names, the values `LOG_LEVEL` may hold. */
export const LOG_LEVELS: readonly string[] = ["trace", "debug", "info", "warn", "error", "fatal", "silent"];

/** Log level from `LOG_LEVEL` (a pino level name, any case), default info; anything else is a UsageError. */
export function readLogLevel(env: Env): string {
  const raw = env[LOG_LEVEL_ENV];
  const level = raw?.trim().toLowerCase();
  if (level === undefined || level === "") return "info";
  if (LOG_LEVELS.includes(level)) return level;
  throw new UsageError(
    `${LOG_LEVEL_ENV}=${JSON.stringify(raw?.slice(0, 40))} is not a log level: set it to one of ${LOG_LEVELS.join(", ")} (default info)`,
  );
}

/**
 * The crash seam for the reliability suite: `SYNCMIRROR_CRASH_AT=<point>[:<n>[:SIGTERM|SIGINT]]`
 * sends the process SIGKILL (or SIGTERM / SIGINT: a stop requested mid-work) the n-th time
 * (default 1st) it reaches that point. Unset in production.
 */
export function readCrashAt(
  env: Env,
): { point: string; hit: number; signal: "SIGKILL" | "SIGTERM" | "SIGINT" } | null {
  const value = env.SYNCMIRROR_CRASH_AT;
  if (!value) return null;
  const [point = "", n, signal] = value.split(":");
  const stop = signal === "SIGTERM" || signal === "SIGINT" ? signal : "SIGKILL";
  return { point, hit: n ? Number(n) : 1, signal: stop };
}

/**
 * The retry seam for the tests of "callbacks return what happened": with
 * `SYNCMIRROR_RETRY_EACH_TRANSACTION=1` the first attempt of every store transaction fails at its
 * commit as a conflicting writer would make it fail, so every callback runs twice. Unset in production.
 */
export function readRetryEachTransaction(env: Env): boolean {
  return env.SYNCMIRROR_RETRY_EACH_TRANSACTION === "1";
}

/** The token, or a ConfigError saying which variable to set. */
export function requireToken(config: Config): string {
  const { token, tokenEnv } = config.api;
  const problem = token
    ? unsendableToken(token)
    : `${config.api.tokenSetButEmpty ? "is set but empty" : "is not set"}: export the platform access token in it`;
  if (token && problem === undefined) return token;
  throw new ConfigError(config.file, [
    { path: "api.token_env", message: `environment variable ${tokenEnv} ${problem}` },
  ]);
}

/**
 * Everything the config takes from the environment at startup (the API token, and the PostgreSQL
 * URL when it names one), or the ConfigError of the first missing: checked before anything starts.
 */
export function requireEnvironment(config: Config): void {
  requireToken(config);
  requireDatabaseEnvironment(config);
}

/** The token before any config file exists (`init`): `$SYNCMIRROR_API_TOKEN`, or a UsageError naming it. */
export function requireDefaultToken(env: Env, what: string): string {
  const token = tokenFromEnv(env[DEFAULT_TOKEN_ENV]);
  const problem = token
    ? unsendableToken(token)
    : `${token === "" ? "is set but empty" : "is not set"}: export ${what} in it`;
  if (token && problem === undefined) return token;
  throw new UsageError(`environment variable ${DEFAULT_TOKEN_ENV} ${problem}`);
}

/**
 * yaml's messages that end in the text they met (`Unexpected scalar token in YAML stream: "..."`):
 * that text may be a token pasted where the syntax broke, and the line and column find it anyway.
 */
const QUOTES_THE_FILE =
  /^(.* token in YAML (?:stream|document)|Not a YAML token|Block scalar header includes extra characters): .*$/s;

/** yaml's first message line ends in "at line L, column C:" before a code excerpt it cuts off. */
function yamlMessage(message: string, at: { line: number; col: number } | undefined): string {
  const text = (message.split("\n")[0] ?? "")
    .replace(/ at line \d+, column \d+:?$/, "")
    .replace(QUOTES_THE_FILE, "$1");
  return `YAML: ${text}${at ? ` (line ${at.line}, column ${at.col})` : ""}`;
}

function freeze(file: string, data: z.infer<typeof File>, env: Env): Config {
  const d = data.defaults;
  const mirrors = data.mirrors.map((m, i): MirrorConfig => {
    const settings = Object.fromEntries(
      (Object.keys(SCHEDULE) as ScheduleKey[]).map((key) => [camelCase(key), m[key] ?? d[key]]),
    ) as Omit<MirrorConfig, "name" | "syncConfigId" | "declared">;
    return Object.freeze({
      ...settings,
      name: m.name,
      syncConfigId: m.sync_config_id ?? null,
      declared: m.sync_config ? declaring.freezeSyncConfig(m.sync_config, i) : null,
    });
  });
  const token = tokenFromEnv(env[data.api.token_env]);
  return Object.freeze({
    file,
    api: Object.freeze({
      baseUrl: data.api.base_url.replace(/\/+$/, ""),
      tokenEnv: data.api.token_env,
      token: token === "" ? undefined : token,
      tokenSetButEmpty: token === "",
      timeoutSeconds: data.api.timeout_seconds,
      maxAttempts: data.api.max_attempts,
    }),
    database: Object.freeze(freezeDatabase(data.database, env)),
    http: freezeHttp(file, data.http, env[HTTP_LISTEN_ENV], tokenFromEnv(env[data.http.token_env])),
    search: Object.freeze({ enabled: data.search.enabled }),
    maxConcurrentMirrors: data.max_concurrent_mirrors,
    export: Object.freeze({
      pagesAheadPerRun: data.export.pages_ahead_per_run,
      pagesAheadPerPass: data.export.pages_ahead_per_pass,
      pageSize: data.export.page_size,
    }),
    mirrors: Object.freeze(mirrors),
    history: Object.freeze({ keepDays: data.history.keep_days }),
    manageSyncConfigs: data.manage_sync_configs,
  });
}

function camelCase(key: string): string {
  return key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** Why `api.base_url` is no http(s) URL: `api.example.com/api/v1` lacks only its scheme. */
function baseUrlProblem(url: string): string {
  const example = "e.g. https://api.example.com/api/v1";
  return /^https?:\/\//i.test(url.trim())
    ? `is not a URL: check its host and port (${example})`
    : `must start with http:// or https:// (${example})`;
}

/**
 * A base URL the API's paths can be appended to, with no credentials or parameters in it. One that
 * is no URL at all has its own message (`baseUrlProblem`), and none of these parts to blame.
 */
function isPlainBaseUrl(url: string): boolean {
  const u = URL.parse(url);
  return u === null || (u.username === "" && u.password === "" && u.search === "" && u.hash === "");
}

function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** The file's schema, read by the generator of docs/configuration.md (`npm run docs`). */
export { File as FileSchema };
