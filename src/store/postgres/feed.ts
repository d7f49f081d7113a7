/**
 * The change feed on PostgreSQL, the same page as `../sqlite/feed.ts` reads: each change with
 * the key's current row (its tombstone once deleted) and its current access list, in one statement
 * and so one snapshot: a page is consistent while replicas commit. Seqs commit in order (see changes.ts),
 * so a consumer that moves past a seq never misses a lower one committed later.
 */
import type pg from "pg";
import { parseJsonExact } from "../../exact-json.js";
import type { FeedPage, FeedQuery, FeedResource } from "../consumer-types.js";
import { toIso } from "./schema.js";

type Row = Record<string, unknown>;

/**
 * A page in one statement, so one round trip (it was six: BEGIN, the changes, their rows, their
 * access lists, the newest seq, COMMIT), and one snapshot without a transaction around it. One row
 * per change in seq order, or a single row of nulls when there is none, each carrying whether more
 * follow and the newest seq. The page reads one change more than it shows to know whether more
 * follow, without that change's row and access list.
 *
 * Ordered by the column, not the output's float: `ORDER BY seq` named the float, which no index
 * holds, so each page sorted every change after the cursor (411 ms a page at 720,000 changes, 0.6 ms
 * walking the primary key). Each key's row and access list are a probe of their key index per
 * change (OFFSET 0 keeps each from being planned as a join): as `key = ANY(...)` or a join, a table
 * not yet analyzed was read whole for each page. JSON columns are read as text, so that a number a
 * double cannot hold reaches the feed as stored; the access list is a JSON array of strings.
 */
export const PAGE_SQL = `WITH page AS MATERIALIZED (
    SELECT c.seq, c.key, c.op, c.at FROM changes c WHERE c.seq > $1
      AND ($2::text IS NULL OR c.mirror = $2
           OR EXISTS (SELECT 1 FROM resource_access a WHERE a.key = c.key AND a.mirror = $2))
    ORDER BY c.seq LIMIT $3::int + 1),
  shown AS (SELECT * FROM page ORDER BY seq LIMIT $3::int)
SELECT s.seq::float8 AS seq, s.key, s.op, s.at, r.found, r.content_hash, r.content_text, r.content_format,
    r.content_status, r.title, r.url, r.type, r.source_type, r.server_instance_id, r.native_id, r.modified_at,
    r.fetched_at, r.fields, r.metadata, r.relations, r.attachments, r.provenance, r.deleted_at,
    (SELECT json_agg(json_build_array(a.mirror, a.user_email, a.source)
              ORDER BY a.mirror COLLATE "C", a.user_email COLLATE "C")::text
       FROM (SELECT mirror, user_email, source FROM resource_access a
             WHERE a.key = s.key AND ($2::text IS NULL OR a.mirror = $2) OFFSET 0) a) AS access,
    (SELECT count(*) FROM page) > $3::int AS has_more,
    (SELECT max(seq) FROM changes)::float8 AS newest
  FROM (SELECT) AS always LEFT JOIN shown s ON true
  LEFT JOIN LATERAL (SELECT true AS found, content_hash, content_text, content_format, content_status, title,
      url, type, source_type, server_instance_id, native_id, modified_at, fetched_at, fields::text,
      metadata::text, relations::text, attachments::text, provenance::text, deleted_at
    FROM resources WHERE key = s.key OFFSET 0) r ON true
  ORDER BY s.seq`;

export async function readChanges(pool: pg.Pool, q: FeedQuery): Promise<FeedPage> {
  const rows = (await pool.query<Row>(PAGE_SQL, [q.after, q.mirror ?? null, q.limit])).rows;
  const first = rows[0];
  const page = first?.key === null ? [] : rows;
  const hasMore = first?.has_more === true;
  const last = (page.at(-1)?.seq as number | undefined) ?? q.after;
  return {
    changes: page.map((c) => ({
      seq: c.seq as number,
      key: c.key as string,
      op: c.op as FeedPage["changes"][number]["op"],
      at: toIso(c.at as Date),
      resource: c.found === true ? toResource(c) : null,
      access: (JSON.parse(c.access === null ? "[]" : (c.access as string)) as [string, string, string][]).map(
        ([mirror, userEmail, source]) => ({ mirror, userEmail, source }),
      ),
    })),
    // Caught up: skip past changes a mirror filter left out, so they are not scanned again; a
    // cursor past the newest seq (another database's) comes back to it rather than skip what follows.
    nextAfter: hasMore ? last : Number(first?.newest ?? 0),
    hasMore,
  };
}

const time = (value: unknown): string | null => (value === null ? null : toIso(value as Date));

function toResource(r: Row): FeedResource {
  return {
    key: r.key as string,
    contentHash: r.content_hash as string,
    contentText: r.content_text as string | null,
    contentFormat: r.content_format as string | null,
    contentStatus: r.content_status as string | null,
    title: r.title as string | null,
    url: r.url as string | null,
    type: r.type as string | null,
    sourceType: r.source_type as string,
    serverInstanceId: r.server_instance_id as string,
    nativeId: r.native_id as string,
    modifiedAt: time(r.modified_at),
    fetchedAt: time(r.fetched_at),
    fields: jsonPart(r.fields),
    metadata: jsonPart(r.metadata),
    relations: jsonPart(r.relations),
    attachments: jsonPart(r.attachments),
    provenance: jsonPart(r.provenance),
    deletedAt: time(r.deleted_at),
  };
}

/** A JSON column read as text, so that a number a double cannot hold reaches the feed as stored. */
function jsonPart(text: unknown): unknown {
  return text === null ? null : parseJsonExact(text as string);
}
