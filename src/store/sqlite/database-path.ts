/**
 * Checks on `database.path` before SQLite sees it, so a path that cannot work ends at once in one
 * message naming it and why. `mkdirSync(..., { recursive: true })` is not used: on a filesystem
 * that answers ENOENT to every mkdir (/proc) it retries forever, synchronously.
 */
import {
  accessSync,
  closeSync,
  constants,
  mkdirSync,
  mkdtempSync,
  openSync,
  rmdirSync,
  statSync,
} from "node:fs";
import { dirname, join, resolve } from "node:path";
import Database from "better-sqlite3";
import { DatabasePathError } from "../../errors.js";
import { describeFsError as describe } from "../../fs-errors.js";

const OWNER_ONLY_FILE = 0o600;
const OWNER_ONLY_DIR = 0o700;

/**
 * Creates the missing directories above `path` one level at a time (0700), then opens (creating
 * them empty, 0600) the database file and its `.lock` sidecar, and checks that the directory
 * takes the `-wal` / `-shm` files. Throws DatabasePathError naming the path and the reason.
 */
export function assertCreatableDatabasePath(path: string): void {
  if (path === ":memory:") return;
  const absolute = resolve(path);
  const fail = (reason: string, cause?: unknown) => new DatabasePathError(path, reason, { cause });
  for (const dir of missingDirectories(absolute, fail)) {
    try {
      mkdirSync(dir, { mode: OWNER_ONLY_DIR });
    } catch (cause) {
      throw fail(`cannot create directory ${dir} (${describe(cause)})`, cause);
    }
  }
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

/** The directories above `file` that do not exist yet, outermost first. */
function missingDirectories(file: string, fail: (reason: string, cause?: unknown) => Error): string[] {
  const missing: string[] = [];
  let dir = dirname(file);
  for (;;) {
    let stats: ReturnType<typeof statSync> | undefined;
    try {
      stats = statSync(dir, { throwIfNoEntry: false });
    } catch (cause) {
      // Below a file: keep walking up to name the file that is in the way.
      if ((cause as NodeJS.ErrnoException).code !== "ENOTDIR")
        throw fail(`cannot look at ${dir} (${describe(cause)})`, cause);
    }
    if (stats?.isDirectory()) return missing.reverse();
    if (stats) throw fail(`${dir} is not a directory`);
    missing.push(dir);
    const parent = dirname(dir);
    if (parent === dir) return missing.reverse();
    dir = parent;
  }
}

function isDirectory(file: string): boolean {
  try {
    return statSync(file, { throwIfNoEntry: false })?.isDirectory() ?? false;
  } catch {
    return false;
  }
}
