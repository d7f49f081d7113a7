/**
 * Opening the PostgreSQL store: the pool, a connection check that tells a wrong URL from a server
 * that is down, and the migrations under an advisory lock so replicas starting together migrate
 * once. No message or log line carries the URL (it holds a password): they name its env var.
 */
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import pg from "pg";
import { isPostgresUrl } from "../../config-database.js";
import {
  DatabaseError,
  DatabaseRefusedError,
  DatabaseUnavailableError,
  SyncmirrorError,
} from "../../errors.js";
import { driverError } from "../driver.js";
import { migrationsDir, readJournal, refuseNewerSchema } from "../migrations-dir.js";

const MIGRATIONS_DIR = migrationsDir("postgres");
/** Any fixed number, the same in every syncmirror: the advisory lock held while migrating. */
export const MIGRATION_LOCK = 0x5_9c_4d_11;
const CONNECT_TIMEOUT_MS = 10_000;
const IDLE_TIMEOUT_MS = 5 * 60_000;
const KEEPALIVE_DELAY_MS = 30_000;

/** Server and network states a later attempt may get past: the daemon retries these. */
const UNAVAILABLE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EPIPE",
  "57P01", // admin_shutdown
  "57P03", // cannot_connect_now: starting up or shutting down
  "53300", // too_many_connections
]);

/** How messages name the database, and how they lose any trace of the URL. */
export interface Naming {
  /** "the PostgreSQL database in $SYNCMIRROR_DATABASE_URL" */
  database: string;
  urlEnv: string;
  redact(message: string): string;
}

export function createNaming(url: string, urlEnv: string): Naming {
  const secrets = [url];
  try {
    const password = new URL(url).password;
    if (password) secrets.push(password, decodeURIComponent(password));
  } catch {
    // Not a URL: only the whole string is known to be secret.
  }
  return {
    database: `the PostgreSQL database in $${urlEnv}`,
    urlEnv,
    redact: (message) => secrets.reduce((m, secret) => m.split(secret).join("***"), message),
  };
}

const codeOf = (error: unknown): string | undefined => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
};

const messageOf = (error: unknown, naming: Naming): string =>
  naming.redact(error instanceof Error ? error.message : String(error));

/** Raised for a failure to connect: permanent (the URL is wrong) or retryable (the server is away). */
export function connectError(error: unknown, naming: Naming): SyncmirrorError {
  if (error instanceof SyncmirrorError) return error;
  const code = codeOf(error);
  const detail = messageOf(error, naming);
  const options = { cause: error };
  if (code === "28P01" || code === "28000") {
    return new DatabaseRefusedError(
      `cannot log in to ${naming.database} (${detail}): fix the user or password in the URL that $${naming.urlEnv} holds`,
      options,
    );
  }
  if (code === "3D000") {
    return new DatabaseRefusedError(
      `${naming.database} does not exist (${detail}): create it (createdb) or fix the database name in $${naming.urlEnv}`,
      options,
    );
  }
  // 55000 at connect: the database exists but takes no connections now (ALLOW_CONNECTIONS false
  // while it is restored or maintained): as transient as a server that is starting up.
  if (isConnectionLost(code, detail) || code === "55000") {
    return new DatabaseUnavailableError(
      `cannot reach ${naming.database} (${detail}): check that the server is up and reachable from here`,
      options,
    );
  }
  return new DatabaseError(`cannot connect to ${naming.database}: ${detail}`, options);
}

const RESUMES = "then run again: the mirror resumes where it stopped";

/**
 * Any failure of a statement or transaction, as the store raises database errors: a message that
 * says what to do for the failures an operator can fix (a full disk, a lost server, a replica that
 * is read-only), the driver's own words otherwise; never the URL.
 */
export function storeError(error: unknown, naming: Naming): SyncmirrorError {
  if (error instanceof SyncmirrorError) return error;
  const own = driverError(error);
  const code = codeOf(own);
  const detail = `${code ? `${code} ` : ""}${messageOf(own, naming)}`;
  const options = { cause: error };
  if (code === "53100") {
    return new DatabaseError(
      `the disk holding ${naming.database} is full (${detail}); free space on the server, ${RESUMES}`,
      options,
    );
  }
  const lost =
    code === undefined
      ? isConnectionLost(code, detail)
      : UNAVAILABLE_CODES.has(code) || code.startsWith("08");
  if (lost) {
    return new DatabaseError(
      `lost the connection to ${naming.database} (${detail}): check that the server is up and reachable from here, ${RESUMES}`,
      options,
    );
  }
  if (code === "25006") {
    return new DatabaseError(
      `${naming.database} is read-only (${detail}): point $${naming.urlEnv} at the primary server, ${RESUMES}`,
      options,
    );
  }
  return new DatabaseError(`${naming.database}: ${detail}`, options);
}

/** A server or network state a later attempt may get past, or pg's own words for a dropped socket. */
function isConnectionLost(code: string | undefined, detail: string): boolean {
  return (
    (code !== undefined && UNAVAILABLE_CODES.has(code)) || /timeout|terminated|connection error/i.test(detail)
  );
}

export function createPool(url: string, poolSize: number, naming: Naming): pg.Pool {
  if (!isPostgresUrl(url))
    throw new DatabaseRefusedError(
      `$${naming.urlEnv} does not hold a postgres:// URL: set it to postgres://user:password@host:5432/database`,
    );
  // Pipelining: statements issued together (a page's writes, the commit with its changes' publishing) go
  // out together and share one round trip; each still has its own Sync, so one failing fails only
  // itself and, inside a transaction, every later one until the rollback.
  // Idle connections are kept for minutes, not pg's default 10 s: passes further apart than that
  // (a daemon's schedules, minutes apart) each opened the pool's connections again, cold (a new
  // backend, its catalog caches empty): an incremental pass of the model walk's mirror 11 s after
  // the one before took 158 ms on loopback, 119 ms on the connections kept.
  return new pg.Pool({
    ...clientConfig(url),
    max: poolSize,
    pipeline: true,
    idleTimeoutMillis: IDLE_TIMEOUT_MS,
  });
}

/** How every connection of the store is opened (the pool's, and the one that LISTENs). */
export function clientConfig(url: string): pg.ClientConfig {
  return {
    connectionString: url,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
    // A connection idle for minutes (`IDLE_TIMEOUT_MS`) sends keepalives, so a firewall or load
    // balancer between here and the server does not drop it as idle, and a dead peer is noticed.
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
    application_name: "syncmirror",
    // Times are read back as text and turned into ISO strings: one zone keeps that exact. No JIT:
    // every statement here is a few index probes or a page's writes, and on tables not yet
    // analyzed the planner's guessed costs crossed jit_above_cost, compiling for 1.1 s to run a
    // feed page's 1 ms of access lookups.
    options: "-c TimeZone=UTC -c jit=off",
  };
}

/**
 * Connects once (the start-up check) and, unless the database is up to date, applies the
 * migrations on that client under the lock. With `create` false, a database syncmirror never
 * migrated (no migrations table) is left as it is: false, for commands that only read.
 */
export async function migrateUnderLock(
  pool: pg.Pool,
  naming: Naming,
  options: { create: boolean } = { create: true },
): Promise<boolean> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw connectError(error, naming);
  }
  let broken: Error | undefined;
  try {
    const applied = await readApplied(client);
    if (applied === null && !options.create) return false;
    if (applied !== null && isUpToDate(applied)) return true;
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
    try {
      await refuseNewerThanBinary(client, naming);
      await migrate(drizzle(client), { migrationsFolder: MIGRATIONS_DIR });
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]);
    }
    return true;
  } catch (error) {
    broken = error as Error;
    if (error instanceof SyncmirrorError) throw error;
    throw new DatabaseError(`cannot migrate ${naming.database}: ${messageOf(error, naming)}`, {
      cause: error,
    });
  } finally {
    // A client that failed mid-way may still hold the lock: destroying it releases the lock.
    client.release(broken);
  }
}

interface Applied {
  n: number;
  newest: string | null;
}

/** What drizzle recorded (one round trip, no lock); null when its table does not exist: a fresh database. */
async function readApplied(client: pg.PoolClient): Promise<Applied | null> {
  try {
    return (await client.query<Applied>(APPLIED_SQL)).rows[0] ?? { n: 0, newest: null };
  } catch (error) {
    if ((error as { code?: string }).code === UNDEFINED_TABLE) return null;
    throw error;
  }
}

/**
 * The database holds exactly the binary's migrations: drizzle applies them and records them in
 * one transaction, so once the newest is recorded its schema is there. Anything else (migrations
 * to apply, a newer schema) takes the locked path.
 */
function isUpToDate(applied: Applied): boolean {
  const { entries } = readJournal("postgres");
  return (
    applied.n === entries.length && applied.newest !== null && Number(applied.newest) === entries.at(-1)?.when
  );
}

const APPLIED_SQL =
  "SELECT count(*)::int AS n, max(created_at)::text AS newest FROM drizzle.__drizzle_migrations";
/** The migrations table does not exist yet: a fresh database. */
const UNDEFINED_TABLE = "42P01";

async function refuseNewerThanBinary(client: pg.PoolClient, naming: Naming): Promise<void> {
  const exists = await client.query<{ t: string | null }>(
    "SELECT to_regclass('drizzle.__drizzle_migrations')::text AS t",
  );
  if (!exists.rows[0]?.t) return;
  const applied = await client.query<{ n: number; newest: string | null }>(APPLIED_SQL);
  const { n, newest } = applied.rows[0] ?? { n: 0, newest: null };
  refuseNewerSchema("postgres", naming.database, { n, newest: newest === null ? null : Number(newest) });
}
