/**
 * The limit client's storage limit: the rows the mirror keeps, written with nothing else. Each
 * key's content once, and one (user, key) row per exported resource, into unindexed tables inside
 * one transaction for the whole export; no hash lookups, no change feed, no secondary indexes.
 * SQLite through bare better-sqlite3 prepared INSERTs, PostgreSQL through one multi-row INSERT
 * per table and page (text columns: the server parses nothing).
 */
import Database from "better-sqlite3";
import pg from "pg";
import { RESOURCE_COLUMNS } from "../src/store/types.js";

export interface Row {
  key: string;
  content_hash: string;
  content?: { format?: string | null; text?: string | null } | null;
  [field: string]: unknown;
}

export interface BareStore {
  /** Milliseconds spent writing the page. */
  write(userEmail: string, resources: Row[]): Promise<number>;
  /** Milliseconds the COMMIT took. */
  commit(): Promise<number>;
}

const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));
const text = (v: unknown) => (typeof v === "string" ? v : null);

/** A resource's values in RESOURCE_COLUMNS order. */
function resourceValues(r: Row): (string | null)[] {
  return [
    r.key,
    r.content_hash,
    r.content?.text ?? null,
    r.content?.format ?? null,
    text(r.content_status),
    text(r.title),
    text(r.url),
    text(r.type),
    text(r.source_type),
    text(r.server_instance_id),
    text(r.native_id),
    text(r.modified_at),
    text(r.fetched_at),
    json(r.fields),
    json(r.metadata),
    json(r.relations),
    json(r.attachments),
    json(r.provenance),
  ];
}

const RESOURCES_DDL = `CREATE TABLE resources (${RESOURCE_COLUMNS.map((c) => `${c} TEXT`).join(", ")})`;
const ACCESS_DDL = "CREATE TABLE access (user_email TEXT, key TEXT)";

export function openSqliteBareStore(path: string): BareStore {
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.exec(RESOURCES_DDL);
  db.exec(ACCESS_DDL);
  const insertResource = db.prepare(
    `INSERT INTO resources VALUES (${RESOURCE_COLUMNS.map(() => "?").join(", ")})`,
  );
  const insertAccess = db.prepare("INSERT INTO access VALUES (?, ?)");
  const written = new Set<string>();
  db.exec("BEGIN");
  return {
    async write(userEmail, resources) {
      const started = performance.now();
      for (const r of resources) {
        insertAccess.run(userEmail, r.key);
        if (written.has(r.key)) continue;
        written.add(r.key);
        insertResource.run(...resourceValues(r));
      }
      return performance.now() - started;
    },
    async commit() {
      const started = performance.now();
      db.exec("COMMIT");
      db.close();
      return performance.now() - started;
    },
  };
}

/** `INSERT INTO table VALUES ($1, $2), ($3, $4), ...` for `rows` rows of `width` values. */
function multiRowInsert(table: string, rows: number, width: number): string {
  const tuples = Array.from(
    { length: rows },
    (_, i) => `(${Array.from({ length: width }, (_, j) => `$${i * width + j + 1}`).join(", ")})`,
  );
  return `INSERT INTO ${table} VALUES ${tuples.join(", ")}`;
}

export async function openPgBareStore(url: string): Promise<BareStore> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(RESOURCES_DDL);
  await client.query(ACCESS_DDL);
  await client.query("BEGIN");
  const written = new Set<string>();
  // One page is written at a time, in arrival order, so each page's time is its own.
  let previous: Promise<unknown> = Promise.resolve();
  return {
    write(userEmail, resources) {
      const fresh = resources.filter((r) => !written.has(r.key) && written.add(r.key));
      const run = async () => {
        const started = performance.now();
        if (resources.length > 0) {
          await client.query(
            multiRowInsert("access", resources.length, 2),
            resources.flatMap((r) => [userEmail, r.key]),
          );
        }
        if (fresh.length > 0) {
          await client.query(
            multiRowInsert("resources", fresh.length, RESOURCE_COLUMNS.length),
            fresh.flatMap(resourceValues),
          );
        }
        return performance.now() - started;
      };
      const done = previous.then(run);
      previous = done;
      return done;
    },
    async commit() {
      await previous;
      const started = performance.now();
      await client.query("COMMIT");
      await client.end();
      return performance.now() - started;
    },
  };
}
