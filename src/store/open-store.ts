/**
 * The composition root of the store (docs/reference/database.md, docs/scaling-out.md): picks the dialect's driver
 * from the config. The only file outside `sqlite/` and `postgres/` that names a dialect; the
 * commands, the daemon and the sync code see a `Store`.
 */
import { existsSync } from "node:fs";
import { type Config, requireDatabaseUrl } from "../config.js";
import { DatabaseRefusedError, SchemaTooNewError } from "../errors.js";
import type { Logger } from "../log.js";
import type { PostgresStoreOptions } from "./postgres/postgres-store.js";
import type { Store } from "./store.js";

/**
 * Each dialect is loaded only when configured: better-sqlite3 and drizzle's SQLite core cost a
 * PostgreSQL process ~20 ms of start-up, pg and its drizzle driver a SQLite one ~0.1 s (the
 * default store, and every `sync` the scheduler would run).
 */
const sqlite = () => import("./sqlite/sqlite-store.js");
const sqlitePath = () => import("./sqlite/database-path.js");
const migrationsApplied = () => import("./sqlite/migrations-applied.js");

export interface OpenStoreOptions {
  /** SQLite: take the single-writer lock (every command that writes). */
  lock: boolean;
  log: Logger;
  /** The SYNCMIRROR_RETRY_EACH_TRANSACTION test seam (`readRetryEachTransaction`). */
  retryEachTransaction?: boolean;
}

export async function openStore(config: Config, options: OpenStoreOptions): Promise<Store> {
  const db = config.database;
  if (db.kind === "sqlite") return (await sqlite()).openSqliteStore(db.path, options);
  const { openPostgresStore } = await import("./postgres/postgres-store.js");
  return openPostgresStore(postgresOptions(config, db, options));
}

function postgresOptions(
  config: Config,
  db: Extract<Config["database"], { kind: "postgres" }>,
  options: OpenStoreOptions,
): PostgresStoreOptions {
  return {
    url: requireDatabaseUrl(config, db),
    urlEnv: db.urlEnv,
    poolSize: db.poolSize,
    log: options.log,
    ...(options.retryEachTransaction === undefined
      ? {}
      : { retryEachTransaction: options.retryEachTransaction }),
  };
}

/**
 * Without the lock, the store of a database that holds a mirror; null, creating and migrating
 * nothing, before the first sync: no SQLite file yet, or one without syncmirror's tables (an empty
 * file), or a PostgreSQL database syncmirror never migrated.
 */
async function openExistingStore(config: Config, log: Logger): Promise<Store | null> {
  const db = config.database;
  if (db.kind === "sqlite") {
    if (!(await holdsMirror(db.path))) return null;
    return (await sqlite()).openSqliteStore(db.path, { lock: false, log });
  }
  const { openExistingPostgresStore } = await import("./postgres/postgres-store.js");
  return openExistingPostgresStore(postgresOptions(config, db, { lock: false, log }));
}

/** A SQLite file exists and holds syncmirror's tables (read without writing anything). */
async function holdsMirror(path: string): Promise<boolean> {
  return existsSync(path) && (await migrationsApplied()).hasMirrorTables(path);
}

/** What holds no mirror yet, for the one line a command says about it. */
function noMirrorYet(config: Config): string {
  const db = config.database;
  return db.kind === "sqlite"
    ? `no mirror database at ${db.path} yet`
    : `no mirror in the PostgreSQL database in $${db.urlEnv} yet`;
}

/** A store with the current schema and nothing in it, kept in memory. */
export async function openEmptyStore(): Promise<Store> {
  return (await sqlite()).openSqliteStore(":memory:");
}

/**
 * For commands that only read (`status`, `plan`, `check`): no lock, and before the first sync (see
 * `openExistingStore`) an empty store instead of creating or migrating the database;
 * `onNoMirror` then gets the one line that says so.
 */
export async function openStoreForReading(
  config: Config,
  log: Logger,
  onNoMirror: (notice: string) => void = () => {},
): Promise<Store> {
  const store = await openExistingStore(config, log);
  if (store) return store;
  onNoMirror(`${noMirrorYet(config)}: nothing has synced; \`syncmirror sync\` creates it`);
  return openEmptyStore();
}

/**
 * `check`'s look at the database, leaving nothing behind: a SQLite file can be created or opened;
 * a PostgreSQL server answers and its schema is current (or is brought up to date), or it holds no
 * mirror yet (left so: only a pass creates one). `refused`: the database refuses this
 * configuration (DatabaseRefusedError) or this binary (a schema newer than it knows), which every
 * other command stops on with exit 2.
 */
export async function checkStore(
  config: Config,
  log: Logger,
): Promise<{ status: "ok" | "problem" | "refused"; message: string }> {
  const db = config.database;
  if (db.kind === "sqlite") {
    const { findDatabasePathProblem, findNotADatabase, findSchemaTooNew } = await sqlitePath();
    const refused = findNotADatabase(db.path) ?? findSchemaTooNew(db.path);
    if (refused) return { status: "refused", message: refused.message };
    const problem = findDatabasePathProblem(db.path);
    if (problem !== undefined)
      return {
        status: "problem",
        message: `database ${db.path} cannot be opened: ${problem}; fix database.path or the permissions`,
      };
    const held = await holdsMirror(db.path);
    return { status: "ok", message: `database ${db.path}: can be opened${held ? "" : NO_MIRROR}` };
  }
  try {
    const store = await openExistingStore(config, log);
    await store?.close();
    return {
      status: "ok",
      message: `database $${db.urlEnv}: reachable${store ? ", schema current" : NO_MIRROR}`,
    };
  } catch (error) {
    return {
      status:
        error instanceof DatabaseRefusedError || error instanceof SchemaTooNewError ? "refused" : "problem",
      message: `database $${db.urlEnv}: ${(error as Error).message}`,
    };
  }
}

const NO_MIRROR = ", no mirror in it yet: the first `syncmirror sync` or `run` creates it";
