/**
 * A comparable dump of the mirror's public state, for "the crashed-and-resumed (or faulted) run ends
 * where a clean run over an identical simulator ends". Local-clock columns (`updated_at`,
 * `deleted_at`'s value, `retired_at`, `changes.at`, `changes.seq`) are left out or reduced to
 * booleans, and so is `fetched_at`: several users' runs export the same key with the same
 * content_hash, only the first one ingested writes the row, and runs are ingested concurrently, so
 * which run's fetch time stays differs even between two clean runs; `pairs.first_seen_at` is
 * bookkeeping (a run that failed to export records its pairs one pass later); server-clock columns (`fetched_at`, `last_seen_at`, watermarks) are kept, so both
 * simulators must share a seed and a clock start (the simulator clock steps per event, not with
 * real time, so it is deterministic).
 */
import Database from "better-sqlite3";
import { RESOURCE_COLUMNS } from "../../src/store/types.js";
import type { Harness } from "./mirror-harness.js";

/** What the helpers read through: a harness, or any database read like one (copy-store's target). */
export type DatabaseReader = Pick<Harness, "dialect" | "dbPath" | "query">;

export interface DbSnapshot {
  resources: Record<string, unknown>[];
  access: Record<string, unknown>[];
  pairs: Record<string, unknown>[];
  /** Sorted multiset of "key op". */
  changes: string[];
}

// fetched_at is the fetch time of whichever user's run stored a shared key first: not compared.
const COMPARED_COLUMNS = RESOURCE_COLUMNS.filter((c) => c !== "fetched_at");

/** The mirror's comparable state, read through the harness (so on either store). */
export function snapshot(h: Pick<Harness, "query">): DbSnapshot {
  const all = (sql: string) => h.query<Record<string, unknown>>(sql);
  return {
    resources: all(
      `SELECT ${COMPARED_COLUMNS.join(", ")}, deleted_at IS NOT NULL AS deleted FROM resources ORDER BY key`,
    ),
    access: all(
      `SELECT mirror, user_email, key, server_instance_id, source, last_seen_at, missed_full_count
         FROM resource_access ORDER BY mirror, user_email, key`,
    ),
    pairs: all(
      `SELECT mirror, user_email, server_instance_id, watermark, awaiting_baseline,
                skip_reason, retired_at IS NOT NULL AS retired, retired_reason
         FROM pairs ORDER BY mirror, user_email, server_instance_id`,
    ),
    changes: all("SELECT key, op FROM changes")
      .map((r) => `${r.key} ${r.op}`)
      .sort(),
  };
}

/** `PRAGMA integrity_check` and foreign-key check: "ok" when the file is sound. */
export function integrityOf(path: string): string {
  const db = new Database(path, { readonly: true });
  try {
    const rows = db.pragma("integrity_check") as { integrity_check: string }[];
    return rows.map((r) => r.integrity_check).join("; ");
  } finally {
    db.close();
  }
}

/**
 * Invariants that hold after every committed transaction, crashed or not: a pair's watermark is
 * the created_at of one of its user's runs that was ingested to the end; a run whose checkpoint says
 * "done" has no next offset; every access row points at a resource row; at most one change per key
 * per run; tombstones hold no content. On SQLite also `PRAGMA integrity_check` (a kill -9 must
 * not corrupt the file; PostgreSQL's own recovery is not ours to test). Returns the violations.
 */
export function databaseProblems(h: DatabaseReader): string[] {
  const problems: string[] = [];
  if (h.dialect === "sqlite") {
    const integrity = integrityOf(h.dbPath);
    if (integrity !== "ok") problems.push(`integrity check: ${integrity}`);
  }
  const found = (what: string, sql: string) => {
    for (const r of h.query(sql)) problems.push(`${what}: ${JSON.stringify(r)}`);
  };
  found(
    "watermark ahead of ingest",
    `SELECT p.user_email, p.watermark FROM pairs p WHERE p.watermark IS NOT NULL AND NOT EXISTS (
       SELECT 1 FROM runs r WHERE r.mirror = p.mirror AND r.user_email = p.user_email
         AND r.created_at = p.watermark AND r.ingest = 'done')`,
  );
  found(
    "run done with a next offset",
    "SELECT sync_id FROM runs WHERE ingest = 'done' AND next_offset IS NOT NULL",
  );
  found(
    "access without a resource",
    "SELECT a.key FROM resource_access a LEFT JOIN resources r ON r.key = a.key WHERE r.key IS NULL",
  );
  found(
    "key changed twice in one run",
    `SELECT sync_id, key, count(*) AS n FROM changes WHERE sync_id IS NOT NULL
     GROUP BY sync_id, key HAVING count(*) > 1`,
  );
  found(
    "tombstone with content",
    "SELECT key FROM resources WHERE deleted_at IS NOT NULL AND (content_text IS NOT NULL OR fields IS NOT NULL)",
  );
  return problems;
}

/**
 * Where two snapshots differ, a few lines per table (empty when equal): readable where a deep
 * equality failure over thousands of rows is not.
 */
export function snapshotDiff(actual: DbSnapshot, expected: DbSnapshot, limit = 5): string[] {
  const out: string[] = [];
  for (const table of ["resources", "access", "pairs", "changes"] as const) {
    const a = new Map<string, unknown>(actual[table].map((r, i) => [rowId(r, i), r]));
    const e = new Map<string, unknown>(expected[table].map((r, i) => [rowId(r, i), r]));
    const lines: string[] = [];
    for (const [id, row] of e) {
      if (!a.has(id)) lines.push(`${table}: missing ${trim(JSON.stringify(row))}`);
      else {
        const fields = differingFields(a.get(id), row);
        if (fields.length > 0) lines.push(`${table} ${id}: ${fields.join(", ")}`);
      }
    }
    for (const [id, row] of a) if (!e.has(id)) lines.push(`${table}: extra ${trim(JSON.stringify(row))}`);
    if (actual[table].length !== expected[table].length)
      lines.unshift(`${table}: ${actual[table].length} rows, expected ${expected[table].length}`);
    out.push(...lines.slice(0, limit));
  }
  return out;
}

function differingFields(actual: unknown, expected: unknown): string[] {
  if (typeof expected !== "object" || expected === null)
    return actual === expected ? [] : [`${trim(String(actual))} != ${trim(String(expected))}`];
  const a = actual as Record<string, unknown>;
  return Object.entries(expected as Record<string, unknown>)
    .filter(([k, v]) => a[k] !== v)
    .map(
      ([k, v]) =>
        `${k}: ${trim(JSON.stringify(a[k]) ?? "undefined")} != ${trim(JSON.stringify(v) ?? "undefined")}`,
    );
}

function rowId(row: unknown, i: number): string {
  if (typeof row === "string") return `${row}#${i}`;
  const r = row as Record<string, unknown>;
  return [r.mirror, r.user_email, r.key, r.server_instance_id].join("|");
}

function trim(s: string): string {
  return s.length > 300 ? `${s.slice(0, 300)}...` : s;
}

/**
 * Text cells whose bytes are not UTF-8 (SQLite takes whatever bytes it is given; a reader in
 * another language then fails on the row). Returns "table.column key" for each. PostgreSQL checks
 * every text value against the database's encoding on the way in, so there the database must be
 * UTF8 (a SQL_ASCII database would take any bytes).
 */
export function invalidUtf8Cells(h: Harness): string[] {
  if (h.dialect === "postgres") {
    const [row] = h.query<{ encoding: string }>(
      "SELECT pg_encoding_to_char(encoding) AS encoding FROM pg_database WHERE datname = current_database()",
    );
    return row?.encoding === "UTF8" ? [] : [`database encoding ${row?.encoding}`];
  }
  const db = new Database(h.dbPath, { readonly: true });
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const bad: string[] = [];
  try {
    const columns = [
      ...COMPARED_COLUMNS.map((c) => ["resources", c]),
      ["resource_access", "key"],
      ["changes", "key"],
    ];
    for (const [table, column] of columns) {
      const rows = db.prepare(`SELECT rowid AS id, CAST(${column} AS BLOB) AS b FROM ${table}`).all() as {
        id: number;
        b: Buffer | null;
      }[];
      for (const r of rows) {
        if (r.b === null) continue;
        try {
          decoder.decode(r.b);
        } catch {
          bad.push(`${table}.${column} rowid ${r.id}`);
        }
      }
    }
    return bad;
  } finally {
    db.close();
  }
}
