/**
 * Nothing outside `src/store/` knows which database it has: no file there imports a dialect's
 * folder (`store/sqlite/`, `store/postgres/`) or driver package, names a dialect in a string
 * (`"sqlite"`, `"postgres"`), branches on a store's `dialect`, or speaks a dialect's own words
 * (`SQLITE_` codes, pragmas). `src/store/open-store.ts` is the composition root that picks the
 * driver; `config-database.ts` parses `database:` into its two shapes, the one exception.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = join(import.meta.dirname, "..", "..", "src");
const ALLOWED = new Set(["config-database.ts"]);
const DRIVER_PACKAGES =
  /^(pg|pg-.*|better-sqlite3|drizzle-orm\/(better-sqlite3|node-postgres|sqlite-core|pg-core).*)$/;

/** What in `source` names a dialect, one line each. */
function dialectMentions(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(/\bfrom\s+["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/g)) {
    const specifier = m[1] ?? m[2] ?? "";
    if (/(^|\/)store\/(sqlite|postgres)\//.test(specifier) || DRIVER_PACKAGES.test(specifier))
      found.push(`imports ${specifier}`);
  }
  for (const m of source.matchAll(/["'`](sqlite|postgres|postgresql)["'`]/gi)) found.push(`names ${m[0]}`);
  // SQLITE_PATH is the documented name of copy-store's argument, not a SQLite word.
  for (const m of source.matchAll(/["'`][^"'`\n]*\b(SQLITE_(?!PATH\b)\w*|PRAGMA)\b/g))
    found.push(`says ${m[1]}`);
  for (const m of source.matchAll(/\.dialect\b|\.pragma\(/g)) found.push(`calls ${m[0]}`);
  return found;
}

function filesOutsideStore(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return path === join(SRC, "store") ? [] : filesOutsideStore(path);
    return entry.name.endsWith(".ts") && !ALLOWED.has(entry.name) ? [path] : [];
  });
}

describe("the store boundary", () => {
  it("keeps every dialect inside src/store/", () => {
    const files = filesOutsideStore(SRC);
    expect(files.length).toBeGreaterThan(50);
    const problems = files.flatMap((file) =>
      dialectMentions(readFileSync(file, "utf8")).map((m) => `${relative(SRC, file)}: ${m}`),
    );
    expect(problems).toEqual([]);
  });

  it("would catch each way of naming a dialect", () => {
    const offending = [
      'import { openDatabase } from "../store/sqlite/open.js";',
      'const { openPostgresStore } = await import("./store/postgres/postgres-store.js");',
      'import pg from "pg";',
      'if (config.database.kind === "sqlite") {}',
      'if (store.dialect !== "postgres") {}',
      'if (code.startsWith("SQLITE_")) {}',
      'sqlite.pragma("data_version", { simple: true });',
      'sqlite.exec("PRAGMA data_version");',
    ];
    for (const line of offending) expect(dialectMentions(line), line).not.toEqual([]);
    expect(
      dialectMentions('import type { Store } from "../store/store.js"; // SQLite or PostgreSQL'),
    ).toEqual([]);
  });
});
