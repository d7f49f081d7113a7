/**
 * `copy-store`: a SQLite mirror copied into an empty PostgreSQL database (docs/reference/cli.md), so a
 * mirror that outgrows SQLite moves without a fresh full sync.
 *
 * - The SQLite file is opened with its writer lock, so no daemon or `sync` writes it meanwhile
 *   (one that runs makes the copy refuse: stop it first). Its pending migrations are applied, as
 *   any syncmirror command does, so its columns are the binary's: only once the target is found
 *   empty, so a copy refused leaves a mirror of an older syncmirror openable by it.
 * - The target is migrated, then everything is copied in one PostgreSQL transaction, after the
 *   copied tables are locked and found empty: a copy that fails or is stopped leaves the target
 *   empty, and a second copy into a filled database is refused naming what is there.
 * - Rows are read with an iterator and written in batches (at most BATCH_ROWS rows or BATCH_BYTES
 *   of text), so memory is bounded by the batch, not by the mirror.
 * - `changes` keep their seq (a consumer's saved position stays valid) and `triggers` their ids
 *   (runs point at them); each identity sequence continues after the largest copied value.
 * - A trigger in flight is copied with its runs' checkpoints: the next pass on PostgreSQL resumes
 *   it, as it would resume one a stopped daemon left, never POSTing it again.
 */
import type pg from "pg";
import { type Config, requireDatabaseUrl } from "../config.js";
import { AbortedError, TargetNotEmptyError, UsageError } from "../errors.js";
import { checkCopySource, copySourceError, openCopySource } from "./copy-source.js";
import { COPIED_TABLES, type CopiedTable, describeTable, insertSql, toPostgres } from "./copy-tables.js";
import { createNaming, createPool, migrateUnderLock, type Naming, storeError } from "./postgres/open.js";
import type { OpenDatabase } from "./sqlite/open.js";

const BATCH_ROWS = 500;
const BATCH_BYTES = 8 * 1024 * 1024;

export interface CopyStoreOptions {
  sqlitePath: string;
  /** Its `database` is the target: it must name a PostgreSQL database (`database.url_env`). */
  config: Config;
  signal: AbortSignal;
  /** Called as each table is done. */
  onTable?: (table: string, rows: number) => void;
}

export interface CopyStoreResult {
  /** The target as messages name it (never its URL, which carries a password). */
  target: string;
  rows: Record<string, number>;
  /** The largest `changes.seq` copied: the PostgreSQL feed continues after it (0: no change yet). */
  lastSeq: number;
}

export async function copyStore(options: CopyStoreOptions): Promise<CopyStoreResult> {
  const { config } = options;
  const db = config.database;
  if (db.kind !== "postgres")
    throw new UsageError(
      `${config.file} names a SQLite database (database.path): copy-store copies into PostgreSQL, so give it a config whose database.url_env names the target, and the SQLite file with --from`,
    );
  const url = requireDatabaseUrl(config, db);
  checkCopySource(options.sqlitePath);
  const naming = createNaming(url, db.urlEnv);
  const pool = createPool(url, 1, naming);
  try {
    await migrateUnderLock(pool, naming);
    const client = await pool.connect();
    try {
      const copied = await copyInTransaction(client, naming, options);
      return { ...copied, target: `the PostgreSQL database in $${db.urlEnv}` };
    } finally {
      client.release();
    }
  } finally {
    await pool.end();
  }
}

async function copyInTransaction(
  client: pg.PoolClient,
  naming: Naming,
  options: CopyStoreOptions,
): Promise<Omit<CopyStoreResult, "target">> {
  const tables = COPIED_TABLES.map(describeTable);
  try {
    await client.query("BEGIN");
    // Writers of a replica started meanwhile wait for the copy; a second copy waits, then refuses.
    await client.query(`LOCK TABLE ${tables.map((t) => t.name).join(", ")} IN SHARE ROW EXCLUSIVE MODE`);
    await refuseNonEmpty(client, tables, naming);
    // Opened once the target is known to take the copy: opening migrates a mirror of an older
    // syncmirror, which that version then refuses, so a copy refused leaves it as it was.
    const source = openCopySource(options.sqlitePath);
    try {
      const rows: Record<string, number> = {};
      for (const table of tables) {
        rows[table.name] = await copyTable(source, client, table, options.signal);
        if (table.identity !== undefined)
          await continueIdentity(client, table.name, table.identity, handedOut(source, table.name));
        options.onTable?.(table.name, rows[table.name] ?? 0);
      }
      const lastSeq = Math.max(
        handedOut(source, "changes"),
        Number(
          (await client.query<{ n: string | null }>("SELECT max(seq) AS n FROM changes")).rows[0]?.n ?? 0,
        ),
      );
      await client.query("COMMIT");
      return { rows, lastSeq };
    } finally {
      source.close();
    }
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    // A failure reading the SQLite file (damage past what opening reads) is said of --from.
    const code = (error as { code?: unknown }).code;
    throw typeof code === "string" && code.startsWith("SQLITE_")
      ? copySourceError(options.sqlitePath, error)
      : storeError(error, naming);
  }
}

async function refuseNonEmpty(client: pg.PoolClient, tables: CopiedTable[], naming: Naming): Promise<void> {
  const filled: { table: string; rows: number }[] = [];
  for (const { name } of tables) {
    const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${name}`);
    const n = Number(rows[0]?.n ?? 0);
    if (n > 0) filled.push({ table: name, rows: n });
  }
  if (filled.length > 0) throw new TargetNotEmptyError(naming.database, filled);
}

/** Streams one table from SQLite into PostgreSQL in batches; returns how many rows. */
async function copyTable(
  source: OpenDatabase,
  client: pg.PoolClient,
  table: CopiedTable,
  signal: AbortSignal,
): Promise<number> {
  const sql = insertSql(table);
  const select = source.sqlite.prepare(
    `SELECT ${table.columns.map((c) => `"${c.name}"`).join(", ")} FROM "${table.name}"`,
  );
  let batch: unknown[][] = table.columns.map(() => []);
  let batchRows = 0;
  let batchBytes = 0;
  let total = 0;
  const flush = async () => {
    if (batchRows === 0) return;
    if (signal.aborted)
      throw new AbortedError(
        "copy-store stopped: nothing was copied (the transaction rolled back); run it again",
      );
    await client.query(sql, batch);
    total += batchRows;
    batch = table.columns.map(() => []);
    batchRows = 0;
    batchBytes = 0;
  };
  for (const row of select.iterate() as IterableIterator<Record<string, unknown>>) {
    table.columns.forEach((c, i) => {
      const value = row[c.name];
      if (typeof value === "string") batchBytes += value.length;
      batch[i]?.push(toPostgres(c.kind, value));
    });
    batchRows += 1;
    if (batchRows >= BATCH_ROWS || batchBytes >= BATCH_BYTES) await flush();
  }
  await flush();
  return total;
}

/**
 * The largest id SQLite ever handed out in a table (AUTOINCREMENT keeps it in `sqlite_sequence`),
 * rows since deleted included: a consumer that trimmed the feed still holds a seq past what is left.
 */
function handedOut(source: OpenDatabase, table: string): number {
  const hasSequences = source.sqlite
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_sequence'")
    .get();
  if (hasSequences === undefined) return 0;
  const row = source.sqlite.prepare("SELECT seq FROM sqlite_sequence WHERE name = ?").get(table) as
    | { seq: number | null }
    | undefined;
  return Number(row?.seq ?? 0);
}

/**
 * The identity sequence continues after the largest copied value and every id SQLite handed out,
 * so none is used twice (left alone when there is neither).
 */
async function continueIdentity(
  client: pg.PoolClient,
  table: string,
  column: string,
  floor: number,
): Promise<void> {
  await client.query(
    `SELECT setval(pg_get_serial_sequence($1, $2), greatest(max(${column}), $3::bigint)) FROM ${table}
      HAVING greatest(max(${column}), $3::bigint) > 0`,
    [table, column, floor],
  );
}
