/**
 * What `copy-store` copies from a SQLite mirror into PostgreSQL, table by table, and how one
 * SQLite row becomes the values PostgreSQL takes. Every table of the PostgreSQL schema is either
 * copied or named in NOT_COPIED with why (a test holds the two lists to the schema, so a table
 * added later needs a decision).
 */
import { getTableColumns, getTableName } from "drizzle-orm";
import type { PgTable } from "drizzle-orm/pg-core";
import { pgJson, pgText, pgTime } from "./postgres/pg-values.js";
import * as pg from "./postgres/schema.js";

/** Tables holding the mirror's state: content, access, the change feed, schedules and history. */
export const COPIED_TABLES: readonly PgTable[] = [
  pg.resources,
  pg.resourceAccess,
  pg.changes,
  pg.mirrorState,
  pg.pairs,
  // Finished triggers and their runs carry the history `status` and the skipped gauge read; an
  // unfinished one, with its runs' checkpoints and dry-run scratch, is resumed on PostgreSQL.
  pg.triggers,
  pg.runs,
  pg.runSources,
  pg.dryRunSeen,
  pg.dryRunRevoke,
  // Which sync configs syncmirror created or adopted for declared mirrors, and the full pass owed.
  pg.managedSyncConfigs,
  // Scheduled times already recorded, the pass due and the pause (so nothing is caught up twice),
  // and who paused, resumed or triggered what.
  pg.schedules,
  pg.controlActions,
  // The history's errors, the open problems and the sweep approvals (pending or used).
  pg.passErrors,
  pg.problems,
  pg.sweepApprovals,
];

/** Tables left behind, by name, and why. */
export const NOT_COPIED: Readonly<Record<string, string>> = {
  leases: "who runs a mirror's pass right now: no process runs one during the copy",
  replicas: "which daemons are alive right now: none runs during the copy",
};

type Kind = "text" | "json" | "time" | "boolean" | "number";

export interface CopiedColumn {
  name: string;
  kind: Kind;
  /** The PostgreSQL array type `unnest` reads this column's batch as. */
  arrayType: string;
}

export interface CopiedTable {
  name: string;
  columns: CopiedColumn[];
  /** An identity column: inserted as stored (OVERRIDING SYSTEM VALUE), its sequence moved past it. */
  identity: string | undefined;
}

const KINDS: Readonly<Record<string, [Kind, string]>> = {
  text: ["text", "text[]"],
  jsonb: ["json", "jsonb[]"],
  "timestamp with time zone": ["time", "timestamptz[]"],
  boolean: ["boolean", "boolean[]"],
  integer: ["number", "integer[]"],
  bigint: ["number", "bigint[]"],
};

export function describeTable(table: PgTable): CopiedTable {
  const columns = Object.values(getTableColumns(table));
  return {
    name: getTableName(table),
    columns: columns.map((c) => {
      const kind = KINDS[c.getSQLType()];
      if (!kind) throw new Error(`copy-store does not know the column type ${c.getSQLType()} of ${c.name}`);
      return { name: c.name, kind: kind[0], arrayType: kind[1] };
    }),
    identity: columns.find((c) => c.generatedIdentity !== undefined)?.name,
  };
}

/** A SQLite value as PostgreSQL holds it (pg-values.ts: what PostgreSQL refuses, repaired as ingest does). */
export function toPostgres(kind: Kind, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  switch (kind) {
    case "text":
      return pgText(String(value));
    case "json":
      return pgJson(String(value));
    case "time":
      return pgTime(String(value));
    case "boolean":
      return value !== 0 && value !== "0" && value !== false;
    case "number":
      return value;
  }
}

/** One batch of rows as an INSERT of one array per column (one statement, a fixed number of parameters). */
export function insertSql(table: CopiedTable): string {
  const names = table.columns.map((c) => c.name).join(", ");
  const arrays = table.columns.map((c, i) => `$${i + 1}::${c.arrayType}`).join(", ");
  const overriding = table.identity === undefined ? "" : " OVERRIDING SYSTEM VALUE";
  return `INSERT INTO ${table.name} (${names})${overriding} SELECT * FROM unnest(${arrays})`;
}
