/**
 * The SQLite mirror `copy-store` copies (`--from`): checked before it is opened, opened with its
 * writer lock, and every error opening or reading it said of `--from`. The messages opening a
 * database gives advise changing database.path, which would change nothing here: the config
 * copy-store reads names the target.
 */
import { closeSync, openSync, readSync, statSync } from "node:fs";
import { DatabaseError, DatabaseLockedError, DatabasePathError, UsageError } from "../errors.js";
import { errorCodes } from "./driver.js";
import { hasMirrorTables } from "./sqlite/migrations-applied.js";
import { type OpenDatabase, openDatabase } from "./sqlite/open.js";
import { driverMessage } from "./sqlite/sqlite-errors.js";

const FROM_NAMES = "--from names the database.path of the mirror to copy";

/** Every SQLite database file begins with these 16 bytes. */
const SQLITE_HEADER = Buffer.from("SQLite format 3\0", "latin1");

/** Refuses (exit 2) a `path` that names no syncmirror mirror, reading it only. */
export function checkCopySource(path: string): void {
  const problem = sourceProblem(path);
  if (problem) throw new UsageError(`${problem}: ${FROM_NAMES}`);
}

/**
 * Opens the mirror at `path` (checkCopySource's first) with its lock and its pending migrations
 * applied, as any syncmirror command does, so its columns are the binary's.
 */
export function openCopySource(path: string): OpenDatabase {
  try {
    return openDatabase(path, { lock: true });
  } catch (error) {
    throw copySourceError(path, error);
  }
}

/**
 * Why `--from` names no syncmirror mirror, checked before the file is opened for writing, which
 * would take its lock, narrow its mode to the owner's and write the schema into it.
 */
function sourceProblem(path: string): string | undefined {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return `no SQLite mirror at ${path}`;
  if (stat.isDirectory()) return `${path} is a directory, not a SQLite database file`;
  if (stat.size === 0) return `${path} is an empty file: it holds no mirror`;
  const fd = openSync(path, "r");
  try {
    const head = Buffer.alloc(SQLITE_HEADER.length);
    readSync(fd, head, 0, head.length, 0);
    if (!head.equals(SQLITE_HEADER)) return `${path} is not a SQLite database`;
  } finally {
    closeSync(fd);
  }
  return hasMirrorTables(path) ? undefined : `${path} is a SQLite database but not a syncmirror mirror`;
}

/**
 * An error opening or reading the mirror at `path`, said of `--from`. A file damaged past where
 * opening reads is found by the copy itself, which rolls back: either way nothing was copied.
 */
export function copySourceError(path: string, error: unknown): unknown {
  const codes = errorCodes(error);
  if (error instanceof DatabaseLockedError)
    return new DatabaseLockedError(
      path,
      error.holder,
      "a daemon or sync is using it: stop it, then copy (a pass it leaves in flight is copied and resumed)",
    );
  if (error instanceof DatabasePathError)
    return new DatabasePathError(path, error.reason, {
      cause: error,
      advice:
        "copy-store takes the mirror's lock and applies its pending migrations, so the file and its directory must be writable by this user (or copy the file with its -wal somewhere writable and name the copy with --from).",
    });
  if (codes.includes("SQLITE_NOTADB"))
    return new UsageError(`${path} is not a SQLite database (${driverMessage(error)}): ${FROM_NAMES}`, {
      cause: error,
    });
  if (codes.some((code) => code.startsWith("SQLITE_CORRUPT")))
    return new DatabaseError(
      `the SQLite mirror ${path} is corrupt (${driverMessage(error)}): nothing was copied; copy a backup of it instead, or start the PostgreSQL mirror empty (its first sync fills it from a full snapshot)`,
      { cause: error },
    );
  if (codes.some((code) => code.startsWith("SQLITE_")))
    return new DatabaseError(
      `cannot read the SQLite mirror ${path} (${codes.find((c) => c.startsWith("SQLITE_"))}: ${driverMessage(error)}): nothing was copied`,
      { cause: error },
    );
  return error;
}
