/**
 * SQLite's errors as the store's: a DatabaseError whose message says what to do (free space, fix
 * the permissions) and that the mirror resumes where it stopped; at open, a file that is no
 * SQLite database is the config's fault.
 */
import { DatabaseError, DatabaseRefusedError } from "../../errors.js";
import { driverError, errorCodes } from "../driver.js";

export function sqliteStoreError(error: unknown): DatabaseError {
  return new DatabaseError(advice(errorCodes(driverError(error))[0], driverMessage(error)), { cause: error });
}

/**
 * SQLITE_NOTADB while opening: `database.path` names some other file. Waiting or fixing
 * permissions changes nothing, so it exits 2 like a config error; undefined for any other error.
 */
export function notADatabaseError(path: string, error: unknown): DatabaseRefusedError | undefined {
  if (!errorCodes(error).includes("SQLITE_NOTADB")) return undefined;
  return new DatabaseRefusedError(
    `database.path: ${path} is not a SQLite database (${driverMessage(error)}): point database.path at the mirror's database, or move the file away so a new one is created`,
    { cause: error },
  );
}

/**
 * SQLITE_CORRUPT while opening: the file is a SQLite database whose pages are damaged. Permissions
 * and free space do not mend it, and a new pass would only build on the damage; a backup does.
 */
export function corruptDatabaseError(path: string, error: unknown): DatabaseError | undefined {
  if (!errorCodes(error).some((code) => code.startsWith("SQLITE_CORRUPT"))) return undefined;
  return new DatabaseError(
    `the database file ${path} is corrupt (${driverMessage(error)}): restore it from a backup (stop every syncmirror using it, replace the file, delete its -wal and -shm files), or point database.path at a new file, which the next sync fills from a full snapshot`,
    { cause: error },
  );
}

/** SQLITE_BUSY: another connection held the write lock past the busy timeout. */
export function isSqliteBusy(error: unknown): boolean {
  return errorCodes(error).some((code) => code.startsWith("SQLITE_BUSY"));
}

/** SQLite's own message, not drizzle's wrapper naming the statement. */
export function driverMessage(error: unknown): string {
  const own = driverError(error);
  return own instanceof Error ? own.message : String(own);
}

function advice(code: string | undefined, message: string): string {
  if (code === "SQLITE_FULL")
    return `the disk holding the database is full (${message}); free space, then run again: the mirror resumes where it stopped`;
  if (code?.startsWith("SQLITE_IOERR"))
    return `the database could not be written (${message}): check that the disk is not full (or over a file-size quota) and healthy, then run again: the mirror resumes where it stopped`;
  if (code?.startsWith("SQLITE_READONLY"))
    return `the database is read-only (${message}); make the file and its directory writable by this user`;
  return code === undefined ? `database error: ${message}` : `database error ${code}: ${message}`;
}
