/**
 * What drizzle's migrator recorded in a SQLite mirror, read without writing: whether a file holds a
 * mirror at all, and how many migrations (and the newest) it has, for refusing a newer schema.
 */
import Database from "better-sqlite3";

/**
 * Whether an existing SQLite file holds a mirror (syncmirror's migrations table), read without
 * writing anything; a file that cannot be opened read-only is left for openDatabase to explain.
 */
export function hasMirrorTables(path: string): boolean {
  let sqlite: Database.Database;
  try {
    sqlite = new Database(path, { readonly: true, fileMustExist: true });
  } catch {
    return true;
  }
  try {
    return hasMigrationsTable(sqlite);
  } catch {
    return true;
  } finally {
    sqlite.close();
  }
}

function hasMigrationsTable(sqlite: Database.Database): boolean {
  return (
    sqlite
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'")
      .get() !== undefined
  );
}

/** What drizzle's migrator recorded in the file: none yet when its table does not exist. */
export function appliedMigrations(sqlite: Database.Database): { n: number; newest: number | null } {
  if (!hasMigrationsTable(sqlite)) return { n: 0, newest: null };
  const row = sqlite
    .prepare("SELECT count(*) AS n, max(created_at) AS newest FROM __drizzle_migrations")
    .get() as {
    n: number;
    newest: number | string | null;
  };
  return { n: row.n, newest: row.newest === null ? null : Number(row.newest) };
}
