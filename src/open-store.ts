/**
 * Picks the store's dialect from the config (SPEC "Database", "Scale-out"): the composition
 * roots (daemon, commands) call this; nothing under `sync/` knows which dialect it got.
 */
import { type Config, requireDatabaseUrl } from "./config.js";
import type { Logger } from "./log.js";
import { openPostgresStore, type PostgresStore } from "./store/postgres/postgres-store.js";
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
  return openPostgresStore({
    url: requireDatabaseUrl(config, db),
    urlEnv: db.urlEnv,
    poolSize: db.poolSize,
    log: options.log,
  });
}
