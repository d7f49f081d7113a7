/**
 * docs/reference/database.md lists every column of the public tables, except the internal ones
 * named here, so a public column added or renamed without its documentation fails here.
 */
import { readFileSync } from "node:fs";
import { getTableColumns } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { changes, resourceAccess, resources } from "../../src/store/sqlite/schema.js";

const page = readFileSync("docs/reference/database.md", "utf8");
/** Columns syncmirror keeps for itself: a consumer must not rely on them. */
const INTERNAL: Record<string, readonly string[]> = {
  resources: ["engine_version", "updated_at"],
  resource_access: ["missed_full_count"],
  changes: ["mirror", "sync_id"],
};

describe("docs/reference/database.md", () => {
  it.each([
    ["resources", resources],
    ["resource_access", resourceAccess],
    ["changes", changes],
  ] as const)("documents every public column of %s", (table, schema) => {
    const section = page.slice(
      page.indexOf(`## \`${table}\``),
      page.indexOf("\n## ", page.indexOf(`## \`${table}\``) + 1),
    );
    const columns = Object.values(getTableColumns(schema)).map((c) => c.name);
    const missing = columns.filter((c) => !INTERNAL[table]?.includes(c) && !section.includes(`\`${c}\``));
    expect(missing).toEqual([]);
  });
});
