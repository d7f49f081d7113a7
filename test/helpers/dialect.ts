/**
 * Which store the mirror suite runs against: vitest's `postgres` project sets
 * SYNCMIRROR_TEST_DIALECT=postgres for the same files the `sqlite` project runs (vitest.config.ts).
 */
import { execFileSync } from "node:child_process";

export type TestDialect = "sqlite" | "postgres";

export const TEST_DIALECT: TestDialect =
  process.env.SYNCMIRROR_TEST_DIALECT === "postgres" ? "postgres" : "sqlite";

/**
 * A synchronous read of a Postgres database for assertions, through `psql`, shaped like
 * better-sqlite3's rows so one assertion serves both dialects: booleans as 0/1, times as ISO
 * strings, JSON columns as their JSON text. `?` placeholders take `params` as literals.
 */
export function queryPostgres<T>(url: string, sql: string, params: readonly unknown[]): T[] {
  let i = 0;
  const text = sql.replace(/\?/g, () => literal(params[i++]));
  const out = execFileSync(
    "psql",
    [
      url,
      "-X",
      "-q",
      "-A",
      "-t",
      "-v",
      "ON_ERROR_STOP=1",
      "-c",
      `SELECT coalesce(json_agg(row_to_json(q)), '[]'::json) FROM (${text}) q`,
    ],
    { encoding: "utf8", maxBuffer: 512 * 1024 * 1024 },
  );
  return (JSON.parse(out) as Record<string, unknown>[]).map(normalizeRow) as T[];
}

function literal(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "number") return String(value);
  if (typeof value === "boolean") return value ? "TRUE" : "FALSE";
  return `'${String(value).replace(/'/g, "''")}'`;
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
