/**
 * Creating the directories above a file one level at a time. `mkdirSync(..., { recursive: true })`
 * is not used: on a filesystem that answers ENOENT to every mkdir (/proc) it retries forever,
 * synchronously, deaf to signals. Also whether a path the caller named is a directory, for the
 * commands that must refuse one where a file belongs.
 */
import { mkdirSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { describeFsError } from "./fs-errors.js";

/** Makes the error thrown from a reason (`cannot create directory /proc/nope (ENOENT: ...)`). */
export type PathFailure = (reason: string, cause?: unknown) => Error;

/** Creates the missing directories above `file` (an absolute path), outermost first, with `mode`. */
export function createMissingDirectories(file: string, fail: PathFailure, mode?: number): void {
  for (const dir of missingDirectories(file, fail)) {
    try {
      mkdirSync(dir, { mode });
    } catch (cause) {
      throw fail(`cannot create directory ${dir} (${describeFsError(cause)})`, cause);
    }
  }
}

/** The directories above `file` (an absolute path) that do not exist yet, outermost first. */
export function missingDirectories(file: string, fail: PathFailure): string[] {
  const missing: string[] = [];
  let dir = dirname(file);
  for (;;) {
    let stats: ReturnType<typeof statSync> | undefined;
    try {
      stats = statSync(dir, { throwIfNoEntry: false });
    } catch (cause) {
      // Below a file: keep walking up to name the file that is in the way.
      if ((cause as NodeJS.ErrnoException).code !== "ENOTDIR")
        throw fail(`cannot look at ${dir} (${describeFsError(cause)})`, cause);
    }
    if (stats?.isDirectory()) return missing.reverse();
    if (stats) throw fail(`${dir} is not a directory`);
    missing.push(dir);
    const parent = dirname(dir);
    if (parent === dir) return missing.reverse();
    dir = parent;
  }
}

/** `path` is a directory (false when it does not exist or cannot be looked at). */
export function isDirectory(path: string): boolean {
  try {
    return statSync(path, { throwIfNoEntry: false })?.isDirectory() ?? false;
  } catch {
    return false;
  }
}
