/**
 * Picks the store's dialect from the config (SPEC "Database", "Scale-out"): the composition
 * roots (daemon, commands) call this; nothing under `sync/` knows which dialect it got.
 */
import { existsSync } from "node:fs";
import { type Config, requireDatabaseUrl } from "./config.js";
import type { Logger } from "./log.js";
import type { PostgresStore } from "./store/postgres/postgres-store.js";
import { openSqliteStore, type SqliteStore } from "./store/sqlite/sqlite-store.js";

export type AnyStore = SqliteStore | PostgresStore;

export interface OpenStoreOptions {
  /** SQLite: take the single-writer lock (every command that writes). */
  lock: boolean;
  log: Logger;
}

export async function openStore(config: Config, options: OpenStoreOptions): Promise<AnyStore> {
  const db = config.database;
  if (db.kind === "sqlite") return openSqliteStore(db.path, { lock: options.lock });
  // Loaded only when configured: pg and its drizzle driver cost every SQLite process ~0.1 s of
  // start-up CPU (the default store, and every `sync` the scheduler would run).
  const { openPostgresStore } = await import("./store/postgres/postgres-store.js");
  return openPostgresStore({
    url: requireDatabaseUrl(config, db),
    urlEnv: db.urlEnv,
    poolSize: db.poolSize,
    log: options.log,
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
export function openEmptyStore(): AnyStore {
  return openSqliteStore(":memory:");
}

/**
 * For commands that only read (`status`, `plan`, `check`): no lock, and before the first sync (no
 * SQLite file yet) an empty store instead of creating the file.
 */
export async function openStoreForReading(config: Config, log: Logger): Promise<AnyStore> {
  return missingDatabaseFile(config) !== null ? openEmptyStore() : openStore(config, { lock: false, log });
}
