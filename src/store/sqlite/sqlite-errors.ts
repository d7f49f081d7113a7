/**
 * SQLite's errors as the store's: a DatabaseError whose message says what to do (free space, fix
 * the permissions) and that the mirror resumes where it stopped.
 */
import { DatabaseError } from "../../errors.js";
import { driverError, errorCodes } from "../driver.js";

export function sqliteStoreError(error: unknown): DatabaseError {
  const own = driverError(error);
  const message = own instanceof Error ? own.message : String(own);
  return new DatabaseError(advice(errorCodes(own)[0], message), { cause: error });
}

/** SQLITE_BUSY: another connection held the write lock past the busy timeout. */
export function isSqliteBusy(error: unknown): boolean {
  return errorCodes(error).some((code) => code.startsWith("SQLITE_BUSY"));
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
