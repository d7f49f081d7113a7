/**
 * The public `resources` table: content deduplicated by key, tombstones for keys nobody can see.
 */
import { inArray } from "drizzle-orm";
import type { ResourceRepo } from "../store.js";
import { RESOURCE_COLUMNS, type ResourceWrite, type StoredResourceState } from "../types.js";
import { type Conn, queryOne } from "./connection.js";
import { pgJson, pgText, pgTime } from "./pg-values.js";
import { resources } from "./schema.js";

const JSON_COLUMNS = new Set(["fields", "metadata", "relations", "attachments", "provenance"]);
const TIME_COLUMNS = new Set(["modified_at", "fetched_at", "updated_at"]);

/** Every column `writeAll` sets, in the order of its parameters. */
const WRITTEN = [...RESOURCE_COLUMNS, "engine_version", "updated_at"] as const;
/**
 * Any fixed number, the same in every syncmirror: held shared by page transactions and exclusive
 * by those deciding tombstones (`holdOffTombstones`, `lockTombstones`), until they end.
 */
const TOMBSTONE_LOCK = 0x5_9c_4d_14;
// The statements every exported row runs are named prepared statements: parsed and planned once
// per connection, then only bound and executed.
const FIND_STATE = "syncmirror_resources_find_state";
// Times as the ISO text the sync compares (toISOString's form), written by the server: the client
// would parse each into a Date only to print it again, twice a row of every page.
const isoText = (column: string) =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ${column}`;
const STATE_COLUMNS = `content_hash, ${isoText("deleted_at")}, ${isoText("updated_at")}`;
const FIND_STATE_SQL = `SELECT ${STATE_COLUMNS} FROM resources WHERE key = $1`;
const FIND_STATES = "syncmirror_resources_find_states";
const FIND_STATES_SQL = `SELECT key, ${STATE_COLUMNS} FROM resources WHERE key = ANY($1::text[])`;
// A page's writes in one statement, a column per array; ON CONFLICT cannot touch a row twice in
// one statement, so a key written twice in the batch is sent once, with its last write.
const UPSERT_ALL = "syncmirror_resources_upsert_all";
const arrayType = (column: string) => (TIME_COLUMNS.has(column) ? "timestamptz[]" : "text[]");
const UPSERT_ALL_SQL = `INSERT INTO resources (${WRITTEN.join(", ")}, deleted_at)
  SELECT ${RESOURCE_COLUMNS.map((c) => `t.${c}${JSON_COLUMNS.has(c) ? "::jsonb" : ""}`).join(", ")},
    $${RESOURCE_COLUMNS.length + 1}, $${RESOURCE_COLUMNS.length + 2}::timestamptz, NULL
  FROM unnest(${RESOURCE_COLUMNS.map((c, i) => `$${i + 1}::${arrayType(c)}`).join(", ")})
    AS t(${RESOURCE_COLUMNS.join(", ")})
  ON CONFLICT (key) DO UPDATE SET ${[...WRITTEN.slice(1), "deleted_at"].map((c) => `${c} = excluded.${c}`).join(", ")}`;

interface StateRow {
  content_hash: string;
  deleted_at: string | null;
  updated_at: string;
}

const toState = (row: StateRow): StoredResourceState => ({
  contentHash: row.content_hash,
  deletedAt: row.deleted_at,
  updatedAt: row.updated_at,
});

export function createResourceRepo({ db, client }: Conn): ResourceRepo {
  return {
    async findStates(keys) {
      const states = new Map<string, StoredResourceState>();
      if (keys.length === 0) return states;
      // Keys are stored as pgText makes them (NUL replaced): answer under the caller's own key.
      const asCalled = new Map(keys.map((key) => [pgText(key), key]));
      const { rows } = await client.query<StateRow & { key: string }>({
        name: FIND_STATES,
        text: FIND_STATES_SQL,
        values: [[...asCalled.keys()]],
      });
      for (const row of rows) {
        states.set(asCalled.get(row.key) ?? row.key, toState(row));
      }
      return states;
    },

    async findState(key) {
      const row = await queryOne<StateRow>(client, {
        name: FIND_STATE,
        text: FIND_STATE_SQL,
        values: [pgText(key)],
      });
      return row === undefined ? undefined : toState(row);
    },

    async writeAll(rows, engineVersion, at) {
      if (rows.length === 0) return;
      const last = new Map<string, ResourceWrite>();
      for (const r of rows) last.set(pgText(r.key), r);
      const column = <T>(of: (r: ResourceWrite) => T) => [...last.values()].map(of);
      await client.query({
        name: UPSERT_ALL,
        text: UPSERT_ALL_SQL,
        values: [
          [...last.keys()],
          column((r) => pgText(r.contentHash)),
          column((r) => pgText(r.contentText)),
          column((r) => pgText(r.contentFormat)),
          column((r) => pgText(r.contentStatus)),
          column((r) => pgText(r.title)),
          column((r) => pgText(r.url)),
          column((r) => pgText(r.type)),
          column((r) => pgText(r.sourceType)),
          column((r) => pgText(r.serverInstanceId)),
          column((r) => pgText(r.nativeId)),
          column((r) => pgTime(r.modifiedAt)),
          column((r) => pgTime(r.fetchedAt)),
          column((r) => pgJson(r.fields)),
          column((r) => pgJson(r.metadata)),
          column((r) => pgJson(r.relations)),
          column((r) => pgJson(r.attachments)),
          column((r) => pgJson(r.provenance)),
          engineVersion,
          at,
        ],
      });
    },

    async holdOffTombstones() {
      await client.query("SELECT pg_advisory_xact_lock_shared($1)", [TOMBSTONE_LOCK]);
    },

    async lockTombstones() {
      await client.query("SELECT pg_advisory_xact_lock($1)", [TOMBSTONE_LOCK]);
    },

    async tombstoneAll(keys, at) {
      if (keys.length === 0) return;
      await db
        .update(resources)
        .set({
          deletedAt: at,
          updatedAt: at,
          contentText: null,
          fields: null,
          metadata: null,
          relations: null,
          attachments: null,
          provenance: null,
        })
        .where(inArray(resources.key, keys.map(pgText)));
    },
  };
}
