/**
 * The config file (SPEC "Config file"): YAML, validated with zod, frozen. The only reader of the
 * environment: the token comes from the variable named by `api.token_env`, never from the file.
 */
import { readFileSync } from "node:fs";
import cron from "node-cron";
import { parseDocument } from "yaml";
import { z } from "zod";
import { ConfigError, type ConfigIssue } from "./errors.js";

export const DEFAULT_CONFIG_PATH = "config/syncmirror.yaml";
export const DEFAULT_TOKEN_ENV = "SYNCMIRROR_API_TOKEN";

const cronExpression = z.string().refine((v) => cron.validate(v), {
  message: 'is not a valid cron expression (5 or 6 fields, e.g. "*/15 * * * *")',
});
const timezone = z
  .string()
  .refine(isTimeZone, { message: "is not an IANA time zone (e.g. UTC, Europe/Berlin)" });
const positive = z.number().positive();
const nonNegativeInt = z.number().int().nonnegative();

/** Keys that may appear in `defaults` and be overridden per mirror. */
const scheduleShape = {
  incremental_cron: cronExpression,
  full_cron: cronExpression,
  timezone,
  since_overlap_seconds: nonNegativeInt,
  poll_initial_seconds: positive,
  poll_max_seconds: positive,
  run_timeout_minutes: positive,
  continue_incomplete: nonNegativeInt,
  continue_message: z.string().min(1).max(50_000),
  delete_after_missed_full: z.number().int().min(1),
  max_delete_fraction: z.number().min(0).max(1),
  inaccessible_grace_hours: z.number().nonnegative(),
};

const Defaults = z.strictObject({
  incremental_cron: scheduleShape.incremental_cron.default("*/15 * * * *"),
  full_cron: scheduleShape.full_cron.default("0 3 * * *"),
  timezone: scheduleShape.timezone.default("UTC"),
  since_overlap_seconds: scheduleShape.since_overlap_seconds.default(300),
  poll_initial_seconds: scheduleShape.poll_initial_seconds.default(5),
  poll_max_seconds: scheduleShape.poll_max_seconds.default(60),
  run_timeout_minutes: scheduleShape.run_timeout_minutes.default(240),
  continue_incomplete: scheduleShape.continue_incomplete.default(0),
  continue_message: scheduleShape.continue_message.default("Continue where you stopped and finish the task."),
  delete_after_missed_full: scheduleShape.delete_after_missed_full.default(1),
  max_delete_fraction: scheduleShape.max_delete_fraction.default(0.5),
  inaccessible_grace_hours: scheduleShape.inaccessible_grace_hours.default(72),
});

const Mirror = z
  .strictObject(scheduleShape)
  .partial()
  .extend({
    name: z
      .string()
      .regex(/^[a-z0-9_-]+$/, "must match [a-z0-9_-]+ (it is used in metrics and the database)"),
    sync_config_id: z.string().min(1),
  });

const listen = z
  .string()
  .regex(/^(\[[0-9a-fA-F:]+\]|[^:\s]+):\d{1,5}$/, "must be host:port, e.g. 0.0.0.0:9464");

const File = z.strictObject({
  api: z.strictObject({
    base_url: z.url({ protocol: /^https?$/ }),
    token_env: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name")
      .default(DEFAULT_TOKEN_ENV),
    timeout_seconds: positive.default(60),
    max_attempts: z.number().int().min(1).max(20).default(6),
  }),
  database: z
    .strictObject({ path: z.string().min(1).default("data/mirror.db") })
    .default({ path: "data/mirror.db" }),
  http: z.strictObject({ listen: listen.default("0.0.0.0:9464") }).default({ listen: "0.0.0.0:9464" }),
  max_concurrent_mirrors: z.number().int().min(1).default(2),
  defaults: Defaults.default(Defaults.parse({})),
  mirrors: z
    .array(Mirror)
    .min(1, "list at least one mirror")
    .superRefine((mirrors, ctx) => {
      const seen = new Set<string>();
      mirrors.forEach((m, i) => {
        if (seen.has(m.name))
          ctx.addIssue({ code: "custom", path: [i, "name"], message: `duplicate mirror name "${m.name}"` });
        seen.add(m.name);
      });
    }),
});

/** One mirror with every default resolved. */
export interface MirrorConfig {
  readonly name: string;
  readonly syncConfigId: string;
  readonly incrementalCron: string;
  readonly fullCron: string;
  readonly timezone: string;
  readonly sinceOverlapSeconds: number;
  readonly pollInitialSeconds: number;
  readonly pollMaxSeconds: number;
  readonly runTimeoutMinutes: number;
  readonly continueIncomplete: number;
  readonly continueMessage: string;
  readonly deleteAfterMissedFull: number;
  readonly maxDeleteFraction: number;
  readonly inaccessibleGraceHours: number;
}

export interface Config {
  readonly file: string;
  readonly api: {
    readonly baseUrl: string;
    readonly tokenEnv: string;
    /** From the environment; undefined when the variable is unset (see `requireToken`). */
    readonly token: string | undefined;
    readonly timeoutSeconds: number;
    readonly maxAttempts: number;
  };
  readonly database: { readonly path: string };
  readonly http: { readonly host: string; readonly port: number };
  readonly maxConcurrentMirrors: number;
  readonly mirrors: readonly MirrorConfig[];
}

type Env = Readonly<Record<string, string | undefined>>;

/** The config path: `--config`, else `$SYNCMIRROR_CONFIG`, else `config/syncmirror.yaml`. */
export function resolveConfigPath(flag: string | undefined, env: Env): string {
  return flag ?? env.SYNCMIRROR_CONFIG ?? DEFAULT_CONFIG_PATH;
}

/** Reads, validates and freezes the config. Throws ConfigError naming the file and key paths. */
export function loadConfig(file: string, env: Env): Config {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (cause) {
    throw new ConfigError(
      file,
      [{ path: "", message: `cannot read the file (${(cause as Error).message})` }],
      {
        cause,
      },
    );
  }
  return parseConfig(file, text, env);
}

export function parseConfig(file: string, text: string, env: Env): Config {
  const doc = parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      file,
      doc.errors.map((e) => ({ path: "", message: `YAML: ${e.message.split("\n")[0]}` })),
    );
  }
  const raw: unknown = doc.toJS() ?? {};
  const secretIssues = findSecrets(raw, env);
  if (secretIssues.length > 0) throw new ConfigError(file, secretIssues);
  const parsed = File.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(
      file,
      parsed.error.issues.map((i) => ({ path: formatPath(i.path), message: i.message })),
    );
  }
  return freeze(file, parsed.data, env);
}

/** Log level from `LOG_LEVEL` (pino level names), default info. */
export function readLogLevel(env: Env): string {
  return env.LOG_LEVEL ?? "info";
}

/**
 * The crash seam for the reliability suite: `SYNCMIRROR_CRASH_AT=<point>[:<n>]` kills the process
 * with SIGKILL the n-th time (default 1st) it reaches that point. Unset in production.
 */
export function readCrashAt(env: Env): { point: string; hit: number } | null {
  const value = env.SYNCMIRROR_CRASH_AT;
  if (!value) return null;
  const [point = "", n] = value.split(":");
  return { point, hit: n ? Number(n) : 1 };
}

/** The token, or a ConfigError saying which variable to set. */
export function requireToken(config: Config): string {
  if (config.api.token) return config.api.token;
  throw new ConfigError(config.file, [
    {
      path: "api.token_env",
      message: `environment variable ${config.api.tokenEnv} is not set: export the platform access token in it`,
    },
  ]);
}

function freeze(file: string, data: z.infer<typeof File>, env: Env): Config {
  const d = data.defaults;
  const mirrors = data.mirrors.map((m): MirrorConfig => {
    const pick = <K extends keyof typeof d>(k: K): (typeof d)[K] => (m[k] ?? d[k]) as (typeof d)[K];
    return Object.freeze({
      name: m.name,
      syncConfigId: m.sync_config_id,
      incrementalCron: pick("incremental_cron"),
      fullCron: pick("full_cron"),
      timezone: pick("timezone"),
      sinceOverlapSeconds: pick("since_overlap_seconds"),
      pollInitialSeconds: pick("poll_initial_seconds"),
      pollMaxSeconds: Math.max(pick("poll_max_seconds"), pick("poll_initial_seconds")),
      runTimeoutMinutes: pick("run_timeout_minutes"),
      continueIncomplete: pick("continue_incomplete"),
      continueMessage: pick("continue_message"),
      deleteAfterMissedFull: pick("delete_after_missed_full"),
      maxDeleteFraction: pick("max_delete_fraction"),
      inaccessibleGraceHours: pick("inaccessible_grace_hours"),
    });
  });
  const { host, port } = splitListen(data.http.listen);
  const token = env[data.api.token_env];
  return Object.freeze({
    file,
    api: Object.freeze({
      baseUrl: data.api.base_url.replace(/\/+$/, ""),
      tokenEnv: data.api.token_env,
      token: token === "" ? undefined : token,
      timeoutSeconds: data.api.timeout_seconds,
      maxAttempts: data.api.max_attempts,
    }),
    database: Object.freeze({ path: data.database.path }),
    http: Object.freeze({ host, port }),
    maxConcurrentMirrors: data.max_concurrent_mirrors,
    mirrors: Object.freeze(mirrors),
  });
}

const SECRET_KEY = /(^|_)(token|secret|password|api_?key|bearer)$/i;

/**
 * A token must never sit in the file: a key named like a secret (other than `token_env`) holding a
 * string, or any value equal to the token in the environment. Messages name the key, never the value.
 */
function findSecrets(raw: unknown, env: Env): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const tokenEnv = readTokenEnv(raw);
  const envToken = env[tokenEnv];
  const walk = (value: unknown, path: (string | number)[]): void => {
    if (Array.isArray(value)) {
      for (const [i, v] of value.entries()) walk(v, [...path, i]);
    } else if (value !== null && typeof value === "object") {
      for (const [k, v] of Object.entries(value)) walk(v, [...path, k]);
    } else if (typeof value === "string") {
      const key = String(path.at(-1) ?? "");
      const namedSecret = SECRET_KEY.test(key) && key !== "token_env";
      const isEnvToken = envToken !== undefined && envToken.length >= 8 && value.includes(envToken);
      if (namedSecret || isEnvToken) {
        issues.push({
          path: formatPath(path),
          message: `holds a token; tokens are read only from the environment variable named by api.token_env (${tokenEnv}): remove it from the file`,
        });
      }
    }
  };
  walk(raw, []);
  return issues;
}

function readTokenEnv(raw: unknown): string {
  const api = (raw as { api?: { token_env?: unknown } } | null)?.api;
  return typeof api?.token_env === "string" ? api.token_env : DEFAULT_TOKEN_ENV;
}

function splitListen(listenValue: string): { host: string; port: number } {
  const i = listenValue.lastIndexOf(":");
  return { host: listenValue.slice(0, i).replace(/^\[|\]$/g, ""), port: Number(listenValue.slice(i + 1)) };
}

function formatPath(path: readonly PropertyKey[]): string {
  return path
    .map((p, i) => (typeof p === "number" ? `[${p}]` : `${i === 0 ? "" : "."}${String(p)}`))
    .join("");
}

function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
