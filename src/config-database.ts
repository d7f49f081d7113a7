/**
 * `database:` in the config (docs/reference/database.md, docs/scaling-out.md): a SQLite file by default, or a
 * PostgreSQL database whose URL (it carries a password) is read from the environment only.
 */
import { z } from "zod";
import { ConfigError } from "./errors.js";

type Env = Readonly<Record<string, string | undefined>>;

const DEFAULT_POOL_SIZE = 4;

export const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name");

export const DatabaseSection = z
  .strictObject({
    path: z
      .string()
      .min(1)
      .optional()
      .meta({
        description:
          "The SQLite file of the mirror, relative to the working directory (default `data/mirror.db` when `url_env` is not set). It and its `-wal`, `-shm` and `.lock` files are created readable by their owner only. Keep it on a local disk.",
        examples: ["/data/mirror.db"],
      }),
    url_env: envName.optional().meta({
      description:
        "Instead of `path`: the name of the environment variable holding the `postgres://user:password@host:5432/db` URL of a PostgreSQL database. The URL is never read from the file.",
      examples: ["SYNCMIRROR_DATABASE_URL"],
    }),
    lease_seconds: z
      .number()
      .int()
      .min(1)
      .max(3600)
      .default(60)
      .describe(
        "How long a mirror's lease lasts without renewal (renewed every third of it while a pass runs): a replica that dies mid-pass is replaced within this plus one poll interval. Short leases fail over fast but take a replica's mirrors from it whenever it stalls that long (a pause, a slow database).",
      ),
    // Optional, not defaulted: written beside `path` it is an error, so the file must say whether it was.
    pool_size: z.number().int().min(1).max(100).optional().meta({
      default: DEFAULT_POOL_SIZE,
      description:
        "PostgreSQL connections per process (plan replicas x pool_size on the server). With `url_env` only: beside `path` it is a config error.",
    }),
  })
  .refine((d) => d.path === undefined || d.url_env === undefined, {
    message: "set exactly one of database.path (SQLite) and database.url_env (PostgreSQL)",
  })
  .refine((d) => d.pool_size === undefined || d.url_env !== undefined, {
    path: ["pool_size"],
    message:
      "is for PostgreSQL only (database.url_env), and this file names a SQLite database: remove it, or replace database.path by database.url_env",
  })
  .default({ lease_seconds: 60 })
  .describe("Where the mirror lives: exactly one of `path` (SQLite) and `url_env` (PostgreSQL).");

/** Where the mirror lives: a SQLite file (the default) or a PostgreSQL database (docs/scaling-out.md). */
export type DatabaseConfig =
  | { readonly kind: "sqlite"; readonly path: string; readonly leaseSeconds: number }
  | {
      readonly kind: "postgres";
      readonly urlEnv: string;
      /** From the environment; undefined when the variable is unset, "" when empty (see `requireDatabaseUrl`). */
      readonly url: string | undefined;
      readonly leaseSeconds: number;
      readonly poolSize: number;
    };

export function freezeDatabase(d: z.infer<typeof DatabaseSection>, env: Env): DatabaseConfig {
  if (d.url_env === undefined)
    return { kind: "sqlite", path: d.path ?? "data/mirror.db", leaseSeconds: d.lease_seconds };
  return {
    kind: "postgres",
    urlEnv: d.url_env,
    url: env[d.url_env],
    leaseSeconds: d.lease_seconds,
    poolSize: d.pool_size ?? DEFAULT_POOL_SIZE,
  };
}

/** Whether `url` is a postgres:// (or postgresql://) URL. */
export function isPostgresUrl(url: string): boolean {
  const protocol = URL.parse(url)?.protocol;
  return protocol === "postgres:" || protocol === "postgresql:";
}

/** The PostgreSQL URL, or a ConfigError saying what to set in which variable (never the URL). */
export function requireDatabaseUrl(
  config: { readonly file: string },
  db: Extract<DatabaseConfig, { kind: "postgres" }>,
): string {
  if (db.url && isPostgresUrl(db.url)) return db.url;
  const problem = db.url
    ? "does not hold a postgres:// URL: set it to postgres://user:password@host:5432/database"
    : `${db.url === "" ? "is set but empty" : "is not set"}: export the postgres:// URL of the mirror database in it`;
  throw new ConfigError(config.file, [
    { path: "database.url_env", message: `environment variable ${db.urlEnv} ${problem}` },
  ]);
}

/** The database URL's variable, when the config names one: a ConfigError when it is unset. */
export function requireDatabaseEnvironment(config: {
  readonly file: string;
  readonly database: DatabaseConfig;
}): void {
  if (config.database.kind === "postgres") requireDatabaseUrl(config, config.database);
}
