/**
 * Checks on `database.path` before SQLite sees it, so a path that cannot work ends at once in one
 * message naming it and why.
 */
import { accessSync, closeSync, constants, mkdtempSync, openSync, rmdirSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import Database from "better-sqlite3";
import { createMissingDirectories, isDirectory, missingDirectories } from "../../create-directories.js";
import { DatabasePathError, type DatabaseRefusedError, SchemaTooNewError } from "../../errors.js";
import { describeFsError as describe } from "../../fs-errors.js";
import { refuseNewerSchema } from "../migrations-dir.js";
import { appliedMigrations } from "./migrations-applied.js";
import { notADatabaseError } from "./sqlite-errors.js";

const OWNER_ONLY_FILE = 0o600;
const OWNER_ONLY_DIR = 0o700;

/**
 * Creates the missing directories above `path` one level at a time (0700), then opens (creating
 * them empty, 0600) the database file and its `.lock` sidecar, and checks that the directory
 * takes the `-wal` / `-shm` files. Throws DatabasePathError naming the path and the reason, and
 * DatabaseRefusedError for an existing file that is no SQLite database.
 */
export function assertCreatableDatabasePath(path: string): void {
  if (path === ":memory:") return;
  const absolute = resolve(path);
  const fail = (reason: string, cause?: unknown) => new DatabasePathError(path, reason, { cause });
  createMissingDirectories(absolute, fail, OWNER_ONLY_DIR);
  // Before the lock file is created beside it and its mode made owner-only: a file syncmirror
  // refuses is someone else's, and is left exactly as it was.
  const refused = findNotADatabase(path);
  if (refused) throw refused;
  for (const file of [absolute, `${absolute}.lock`]) {
    if (isDirectory(file)) throw fail(`${file} is a directory, not a file`);
    try {
      closeSync(openSync(file, "a", OWNER_ONLY_FILE));
    } catch (cause) {
      throw fail(`cannot open ${file} for writing (${describe(cause)})`, cause);
    }
  }
  try {
    accessSync(dirname(absolute), constants.W_OK | constants.X_OK);
  } catch (cause) {
    throw fail(
      `directory ${dirname(absolute)} is not writable, so SQLite cannot create its -wal file (${describe(cause)})`,
      cause,
    );
  }
}

/**
 * The refusal of an existing file SQLite says is no database (a text file, another program's
 * data); undefined for a database, an empty or missing file, or one that cannot be read (the
 * other checks name why).
 */
export function findNotADatabase(path: string): DatabaseRefusedError | undefined {
  if (path === ":memory:") return undefined;
  let db: Database.Database | undefined;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
    db.pragma("schema_version");
    return undefined;
  } catch (error) {
    return notADatabaseError(path, error);
  } finally {
    db?.close();
  }
}

/**
 * For `check`: why the database could not be opened or created, without creating anything
 * lasting. An existing file is opened read-only; otherwise a directory is created and removed
 * where the first missing one would go.
 */
export function findDatabasePathProblem(path: string): string | undefined {
  if (path === ":memory:") return undefined;
  const absolute = resolve(path);
  try {
    const missing = missingDirectories(absolute, (reason) => new DatabasePathError(path, reason));
    if (missing.length > 0 || !statSync(absolute, { throwIfNoEntry: false })) {
      const parent = dirname(missing[0] ?? absolute);
      rmdirSync(mkdtempSync(join(parent, ".syncmirror-check-")));
      return undefined;
    }
    if (isDirectory(absolute)) return `${absolute} is a directory, not a database file`;
    accessSync(absolute, constants.R_OK | constants.W_OK);
    accessSync(dirname(absolute), constants.W_OK | constants.X_OK);
    const db = new Database(absolute, { readonly: true, fileMustExist: true });
    try {
      db.pragma("schema_version");
    } finally {
      db.close();
    }
    return undefined;
  } catch (error) {
    return error instanceof DatabasePathError ? error.reason : describe(error);
  }
}

/**
 * For `check`: the refusal of an existing mirror migrated by a newer syncmirror, which every
 * other command stops on at start; undefined for any other file (the other checks name why).
 */
export function findSchemaTooNew(path: string): SchemaTooNewError | undefined {
  if (path === ":memory:") return undefined;
  let db: Database.Database | undefined;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
    refuseNewerSchema("sqlite", path, appliedMigrations(db));
    return undefined;
  } catch (error) {
    return error instanceof SchemaTooNewError ? error : undefined;
  } finally {
    db?.close();
  }
}
