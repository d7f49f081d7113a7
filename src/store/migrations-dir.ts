/**
 * Where a dialect's drizzle-kit migrations ship: `migrations/<dialect>/` at the package root. The
 * code asking may sit in `src/store/` (tests), in a bundled chunk of `dist/` (the built CLI) or in
 * `dist-bench/src/store/` (the bench), so the nearest folder up that holds them is the one.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { SchemaTooNewError } from "../errors.js";

type Dialect = "sqlite" | "postgres";

export function migrationsDir(dialect: Dialect): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const candidate = join(dir, "migrations", dialect);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) {
      throw new Error(
        `no migrations/${dialect} folder above ${fileURLToPath(import.meta.url)}: reinstall syncmirror (the package ships it beside dist/)`,
      );
    }
  }
}

export interface Journal {
  entries: { idx: number; when: number; tag: string }[];
}

/** The binary's migrations of a dialect, as drizzle-kit listed them. */
export function readJournal(dialect: Dialect): Journal {
  return JSON.parse(readFileSync(join(migrationsDir(dialect), "meta", "_journal.json"), "utf8")) as Journal;
}

/**
 * Refuses a database that holds more migrations than the binary knows, or a newer one: drizzle's
 * migrator would skip them all and this binary would run on a schema it does not understand.
 */
export function refuseNewerSchema(
  dialect: Dialect,
  database: string,
  applied: { n: number; newest: number | null },
): void {
  const entries = readJournal(dialect).entries;
  const last = entries.at(-1);
  if (applied.n > entries.length || (applied.newest !== null && applied.newest > (last?.when ?? 0))) {
    throw new SchemaTooNewError(database, applied.n, entries.length, last?.tag ?? "none");
  }
}
