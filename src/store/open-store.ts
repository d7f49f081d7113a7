/**
 * The composition root of the store (docs/reference/database.md, docs/scaling-out.md): picks the dialect's driver
 * from the config. The only file outside `sqlite/` and `postgres/` that names a dialect; the
 * commands, the daemon and the sync code see a `Store`.
 */
import { existsSync } from "node:fs";
import { type Config, requireDatabaseUrl } from "../config.js";
import { DatabaseRefusedError, SchemaTooNewError } from "../errors.js";
import type { Logger } from "../log.js";
import type { Store } from "./store.js";

/**
 * Each dialect is loaded only when configured: better-sqlite3 and drizzle's SQLite core cost a
 * PostgreSQL process ~20 ms of start-up, pg and its drizzle driver a SQLite one ~0.1 s (the
 * default store, and every `sync` the scheduler would run).
 */
const sqlite = () => import("./sqlite/sqlite-store.js");
const sqlitePath = () => import("./sqlite/database-path.js");

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
  return openPostgresStore({
    url: requireDatabaseUrl(config, db),
    urlEnv: db.urlEnv,
    poolSize: db.poolSize,
    log: options.log,
    ...(options.retryEachTransaction === undefined
      ? {}
      : { retryEachTransaction: options.retryEachTransaction }),
  });
}

/**
 * The SQLite file the config names when it does not exist yet (nothing has synced), else null.
 * A command that only reads (`status`) reads an empty store instead of creating the file.
 */
export function missingDatabaseFile(config: Config): string | null {
  const db = config.database;
  return db.kind === "sqlite" && !existsSync(db.path) ? db.path : null;
}

/** A store with the current schema and nothing in it, kept in memory. */
export async function openEmptyStore(): Promise<Store> {
  return (await sqlite()).openSqliteStore(":memory:");
}

/**
 * For commands that only read (`status`, `plan`, `check`): no lock, and before the first sync (no
 * SQLite file yet) an empty store instead of creating the file.
 */
export async function openStoreForReading(config: Config, log: Logger): Promise<Store> {
  return missingDatabaseFile(config) !== null ? openEmptyStore() : openStore(config, { lock: false, log });
}

/**
 * `check`'s look at the database, leaving nothing behind: a SQLite file can be created or opened;
 * a PostgreSQL server answers and its schema is current (or is brought up to date). `refused`:
 * the database refuses this configuration (DatabaseRefusedError) or this binary (a schema newer
 * than it knows), which every other command stops on with exit 2.
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
    return problem === undefined
      ? { status: "ok", message: `database ${db.path}: can be opened` }
      : {
          status: "problem",
          message: `database ${db.path} cannot be opened: ${problem}; fix database.path or the permissions`,
        };
  }
  try {
    const store = await openStore(config, { lock: false, log });
    await store.close();
    return { status: "ok", message: `database $${db.urlEnv}: reachable, schema current` };
  } catch (error) {
    return {
      status:
        error instanceof DatabaseRefusedError || error instanceof SchemaTooNewError ? "refused" : "problem",
      message: `database $${db.urlEnv}: ${(error as Error).message}`,
    };
  }
}
