/**
 * copy-store's table list against the schemas: every PostgreSQL table is copied or left out on
 * purpose (a table added later fails here until someone decides), every copied table has the same
 * columns on SQLite, and SQLite values become what PostgreSQL holds.
 */
import { getTableColumns, getTableName, is } from "drizzle-orm";
import { PgTable } from "drizzle-orm/pg-core";
import { SQLiteTable } from "drizzle-orm/sqlite-core";
import { describe, expect, it } from "vitest";
import { COPIED_TABLES, describeTable, NOT_COPIED, toPostgres } from "../../src/store/copy-tables.js";
import * as postgresSchema from "../../src/store/postgres/schema.js";
import * as sqliteSchema from "../../src/store/sqlite/schema.js";

const postgresTables = Object.values(postgresSchema as Record<string, unknown>).filter((v): v is PgTable =>
  is(v, PgTable),
);
const sqliteTables = new Map<string, SQLiteTable>(
  Object.values(sqliteSchema as Record<string, unknown>)
    .filter((v): v is SQLiteTable => is(v, SQLiteTable))
    .map((t) => [getTableName(t), t]),
);

describe("copy-store's tables", () => {
  it("copies or deliberately leaves out every table of the PostgreSQL schema", () => {
    const copied = COPIED_TABLES.map((t) => getTableName(t));
    const all = postgresTables.map((t) => getTableName(t)).sort();
    expect([...copied, ...Object.keys(NOT_COPIED)].sort()).toEqual(all);
    expect(copied.filter((name) => name in NOT_COPIED)).toEqual([]);
  });

  it("reads every copied column from a SQLite table of the same name", () => {
    for (const table of COPIED_TABLES.map(describeTable)) {
      const sqlite = sqliteTables.get(table.name);
      expect(sqlite, table.name).toBeDefined();
      const sqliteColumns = Object.values(getTableColumns(sqlite as typeof sqliteSchema.resources)).map(
        (c) => c.name,
      );
      expect(table.columns.map((c) => c.name).sort(), table.name).toEqual(sqliteColumns.sort());
    }
  });

  it("keeps the feed's seq and the triggers' ids (identity columns inserted as stored)", () => {
    const identities = Object.fromEntries(COPIED_TABLES.map(describeTable).map((t) => [t.name, t.identity]));
    expect(identities).toMatchObject({ changes: "seq", triggers: "id", resources: undefined });
  });

  it("turns SQLite values into what PostgreSQL holds", () => {
    expect([toPostgres("boolean", 0), toPostgres("boolean", 1), toPostgres("boolean", null)]).toEqual([
      false,
      true,
      null,
    ]);
    expect(toPostgres("text", "a\u0000b")).toBe("a\uFFFDb");
    expect(toPostgres("json", '{"k":"\\ud800"}')).toBe('{"k":"\\ufffd"}');
    expect(toPostgres("time", "2026-01-05T09:00:13Z")).toBe("2026-01-05T09:00:13.000Z");
    expect(toPostgres("time", "not a time")).toBeNull();
    expect(toPostgres("number", 42)).toBe(42);
  });
});
