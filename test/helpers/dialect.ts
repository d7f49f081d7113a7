/**
 * Which store the mirror suite runs against: vitest's `postgres` project sets
 * SYNCMIRROR_TEST_DIALECT=postgres for the same files the `sqlite` project runs (vitest.config.ts).
 */
import { queryJsonSync } from "./pg-sync.js";

export type TestDialect = "sqlite" | "postgres";

export const TEST_DIALECT: TestDialect =
  process.env.SYNCMIRROR_TEST_DIALECT === "postgres" ? "postgres" : "sqlite";

/** In the postgres project: `describe.skipIf(onPostgres)("SQLite only (why): ...")` marks what cannot run there. */
export const onPostgres = TEST_DIALECT === "postgres";

/**
 * A synchronous read of a Postgres database for assertions (see pg-sync.ts), shaped like
 * better-sqlite3's rows so one assertion serves both dialects: booleans as 0/1, times as ISO
 * strings, JSON columns as their JSON text. `?` placeholders take `params`.
 */
export function queryPostgres<T>(url: string, sql: string, params: readonly unknown[]): T[] {
  let n = 0;
  const text = sql.replace(/\?/g, () => `$${++n}`);
  const json = queryJsonSync(
    url,
    `SELECT coalesce(json_agg(row_to_json(q)), '[]'::json)::text AS rows FROM (${text}) q`,
    params,
  );
  return (JSON.parse(json) as Record<string, unknown>[]).map(normalizeRow) as T[];
}

const PG_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?[+-]\d\d:\d\d$/;

function normalizeRow(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) {
    if (typeof v === "boolean") out[k] = v ? 1 : 0;
    else if (typeof v === "string" && PG_TIME.test(v)) out[k] = new Date(v).toISOString();
    else if (v !== null && typeof v === "object") out[k] = JSON.stringify(v);
    else out[k] = v;
  }
  return out;
}
