/**
 * Opening the mirror database: owner-only file modes, WAL, migrations, and the single-writer lock.
 */
import { chmodSync, closeSync, existsSync, openSync } from "node:fs";
import Database from "better-sqlite3";
import { type BetterSQLite3Database, drizzle } from "drizzle-orm/better-sqlite3";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { DatabaseError, DatabaseLockedError, SchemaTooNewError } from "../../errors.js";
import { migrationsDir, readJournal, refuseNewerSchema } from "../migrations-dir.js";
import { assertCreatableDatabasePath } from "./database-path.js";
import { appliedMigrations } from "./migrations-applied.js";
import * as schema from "./schema.js";
import { corruptDatabaseError, notADatabaseError } from "./sqlite-errors.js";

/** Drizzle over the connection; `$client` is the better-sqlite3 handle for hot-path statements. */
export type Db = BetterSQLite3Database<typeof schema> & { $client: Database.Database };

export interface OpenDatabase {
  db: Db;
  sqlite: Database.Database;
  path: string;
  close(): void;
}

const MIGRATIONS_DIR = migrationsDir("sqlite");
const OWNER_ONLY = 0o600;
/** Tries at switching a new file to WAL (below), about 25 ms apart: a few seconds in all. */
const WAL_ATTEMPTS = 120;

/**
 * Opens (creating if needed) the database, applies the migrations and, with `lock`, takes the
 * single-writer lock first so a second process refuses before touching anything.
 */
export function openDatabase(path: string, options: { lock?: boolean } = {}): OpenDatabase {
  assertCreatableDatabasePath(path);
  const release = options.lock ? acquireLock(path) : () => {};
  try {
    const sqlite = openSqlite(path);
    try {
      migrateOnce(sqlite, path);
    } catch (cause) {
      sqlite.close();
      if (cause instanceof SchemaTooNewError) throw cause;
      throw (
        notADatabaseError(path, cause) ??
        corruptDatabaseError(path, cause) ??
        new DatabaseError(`cannot migrate database ${path}: ${(cause as Error).message}`, { cause })
      );
    }
    restrictSidecars(path);
    const db = drizzle(sqlite, { schema });
    return {
      db,
      sqlite,
      path,
      close() {
        if (sqlite.open) sqlite.close();
        release();
      },
    };
  } catch (error) {
    release();
    throw error;
  }
}

/**
 * drizzle's migrator, except that the migrations already applied are read inside the write
 * transaction (BEGIN IMMEDIATE), so processes opening a database together (a daemon starting
 * beside `status`) migrate it once: the others wait, then find nothing to do. drizzle's own reads
 * them before its BEGIN, and the second process re-ran the first's CREATE TABLEs and failed. A
 * database already up to date takes no write lock (a command that only reads never waits for a
 * pass's transaction). The migrations table and its rows are drizzle's.
 */
function migrateOnce(sqlite: Database.Database, path: string): void {
  const newest = readJournal("sqlite").entries.at(-1)?.when ?? null;
  const before = appliedMigrations(sqlite);
  refuseNewerSchema("sqlite", path, before);
  if (before.newest === newest) return;
  sqlite.exec("BEGIN IMMEDIATE");
  try {
    const applied = appliedMigrations(sqlite);
    refuseNewerSchema("sqlite", path, applied);
    sqlite.exec(
      "CREATE TABLE IF NOT EXISTS __drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)",
    );
    const record = sqlite.prepare('INSERT INTO __drizzle_migrations ("hash", "created_at") VALUES (?, ?)');
    for (const migration of readMigrationFiles({ migrationsFolder: MIGRATIONS_DIR })) {
      if (applied.newest !== null && applied.newest >= migration.folderMillis) continue;
      for (const statement of migration.sql) sqlite.exec(statement);
      record.run(migration.hash, migration.folderMillis);
    }
    sqlite.exec("COMMIT");
  } catch (error) {
    if (sqlite.inTransaction) sqlite.exec("ROLLBACK");
    throw error;
  }
}

function openSqlite(path: string): Database.Database {
  try {
    if (path !== ":memory:") {
      // Create the file ourselves so its mode is owner-only whatever the umask; SQLite gives the
      // -wal and -shm files the main file's mode.
      closeSync(openSync(path, "a", OWNER_ONLY));
      chmodSync(path, OWNER_ONLY);
    }
    const sqlite = new Database(path);
    enableWal(sqlite);
    sqlite.pragma("synchronous = NORMAL");
    sqlite.pragma("foreign_keys = ON");
    sqlite.pragma("busy_timeout = 5000");
    // better-sqlite3 builds SQLite with a 16 MB page cache; the mirror reads little twice within a
    // pass and the OS caches the file anyway, so 4 MB: 14 MB less peak RSS at 1M rows, about 4%
    // more CPU there (bench/RESULTS.md, issue 10), and it keeps peak RSS flat as the mirror grows.
    sqlite.pragma("cache_size = -4000");
    return sqlite;
  } catch (cause) {
    // The first read of the file (the journal mode) is where SQLite finds it is no database.
    const refused = notADatabaseError(path, cause) ?? corruptDatabaseError(path, cause);
    if (refused) throw refused;
    throw new DatabaseError(
      `cannot open database ${path}: ${(cause as Error).message}. Check that the file and its directory exist and are writable by this user, and that the disk is not full.`,
      { cause },
    );
  }
}

/**
 * A new file is switched to WAL under its exclusive lock. When processes open it together (a
 * daemon starting beside `status`), SQLite answers BUSY at once instead of calling its busy handler
 * where waiting could deadlock, so the switch is tried again after a short wait. Open is
 * synchronous, and this happens once per process at most.
 */
function enableWal(sqlite: Database.Database): void {
  for (let attempt = 1; ; attempt++) {
    try {
      sqlite.pragma("journal_mode = WAL");
      return;
    } catch (error) {
      if ((error as { code?: unknown }).code !== "SQLITE_BUSY" || attempt >= WAL_ATTEMPTS) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10 + Math.random() * 30);
    }
  }
}

function restrictSidecars(path: string): void {
  for (const suffix of ["-wal", "-shm"]) {
    const file = `${path}${suffix}`;
    if (existsSync(file)) chmodSync(file, OWNER_ONLY);
  }
}

/**
 * The lock is a tiny SQLite file held in exclusive locking mode: the operating system releases it
 * when the process dies, so a crash never leaves a stale lock behind (a pid file would).
 */
function acquireLock(path: string): () => void {
  if (path === ":memory:") return () => {};
  const lockPath = `${path}.lock`;
  closeSync(openSync(lockPath, "a", OWNER_ONLY));
  chmodSync(lockPath, OWNER_ONLY);
  const lock = new Database(lockPath, { timeout: 0 });
  try {
    lock.pragma("locking_mode = EXCLUSIVE");
    lock.exec("CREATE TABLE IF NOT EXISTS holder (pid INTEGER, since TEXT)");
    lock.prepare("INSERT INTO holder (pid, since) VALUES (?, ?)").run(process.pid, new Date().toISOString());
    lock.exec("DELETE FROM holder WHERE rowid < (SELECT max(rowid) FROM holder)");
  } catch (cause) {
    lock.close();
    if ((cause as { code?: string }).code === "SQLITE_BUSY") {
      throw new DatabaseLockedError(path, `lock ${lockPath} is held`);
    }
    throw new DatabaseError(`cannot take the lock ${lockPath}: ${(cause as Error).message}`, { cause });
  }
  return () => {
    if (lock.open) lock.close();
  };
}
