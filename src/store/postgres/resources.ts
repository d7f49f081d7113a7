/**
 * The public `resources` table: content deduplicated by key, tombstones for keys nobody can see.
 */
import { eq } from "drizzle-orm";
import type { ResourceRepo } from "../store.js";
import { RESOURCE_COLUMNS, type ResourceWrite, type StoredResourceState } from "../types.js";
import { type Conn, queryOne } from "./connection.js";
import { pgJson, pgText, pgTime } from "./pg-values.js";
import { resources, toIso } from "./schema.js";

const JSON_COLUMNS = new Set(["fields", "metadata", "relations", "attachments", "provenance"]);
const TIME_COLUMNS = new Set(["modified_at", "fetched_at", "updated_at"]);

/** Every column `write` sets, in the order of its parameters. */
const WRITTEN = [...RESOURCE_COLUMNS, "engine_version", "updated_at"] as const;
const cast = (column: string) =>
  JSON_COLUMNS.has(column) ? "::jsonb" : TIME_COLUMNS.has(column) ? "::timestamptz" : "";

// The statements every exported row runs are named prepared statements: parsed and planned once
// per connection, then only bound and executed.
const FIND_STATE = "syncmirror_resources_find_state";
const FIND_STATE_SQL = "SELECT content_hash, deleted_at, updated_at FROM resources WHERE key = $1";
const FIND_STATES = "syncmirror_resources_find_states";
const FIND_STATES_SQL =
  "SELECT key, content_hash, deleted_at, updated_at FROM resources WHERE key = ANY($1::text[])";
const UPSERT = "syncmirror_resources_upsert";
const UPSERT_SQL = `INSERT INTO resources (${WRITTEN.join(", ")}, deleted_at)
  VALUES (${WRITTEN.map((c, i) => `$${i + 1}${cast(c)}`).join(", ")}, NULL)
  ON CONFLICT (key) DO UPDATE SET ${[...WRITTEN.slice(1), "deleted_at"].map((c) => `${c} = excluded.${c}`).join(", ")}`;

interface StateRow {
  content_hash: string;
  deleted_at: Date | null;
  updated_at: Date;
}

const toState = (row: StateRow): StoredResourceState => ({
  contentHash: row.content_hash,
  deletedAt: row.deleted_at === null ? null : toIso(row.deleted_at),
  updatedAt: toIso(row.updated_at),
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

    async write(r: ResourceWrite, engineVersion, at) {
      await client.query({
        name: UPSERT,
        text: UPSERT_SQL,
        values: [
          pgText(r.key),
          pgText(r.contentHash),
          pgText(r.contentText),
          pgText(r.contentFormat),
          pgText(r.contentStatus),
          pgText(r.title),
          pgText(r.url),
          pgText(r.type),
          pgText(r.sourceType),
          pgText(r.serverInstanceId),
          pgText(r.nativeId),
          pgTime(r.modifiedAt),
          pgTime(r.fetchedAt),
          pgJson(r.fields),
          pgJson(r.metadata),
          pgJson(r.relations),
          pgJson(r.attachments),
          pgJson(r.provenance),
          engineVersion,
          at,
        ],
      });
    },

    async tombstone(key, at) {
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
        .where(eq(resources.key, pgText(key)));
    },
  };
}
