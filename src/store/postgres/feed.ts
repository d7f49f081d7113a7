/**
 * The change feed on PostgreSQL, the same page as `../sqlite/feed.ts` reads: each change with
 * the key's current row (its tombstone once deleted) and its current access list, in one REPEATABLE READ
 * snapshot so a page is consistent while replicas commit. Seqs commit in order (see changes.ts),
 * so a consumer that moves past a seq never misses a lower one committed later.
 */
import type pg from "pg";
import { parseJsonExact } from "../../exact-json.js";
import type { FeedAccess, FeedPage, FeedQuery, FeedResource } from "../consumer-types.js";
import { toIso } from "./schema.js";

type Row = Record<string, unknown>;

// Ordered by the column, not the output's float: `ORDER BY seq` named the float, which no index
// holds, so each page sorted every change after the cursor (411 ms a page at 720,000 changes,
// 0.6 ms walking the primary key).
export const PAGE_SQL = `SELECT seq::float8 AS seq, key, op, at FROM changes c WHERE seq > $1
    AND ($2::text IS NULL OR c.mirror = $2
         OR EXISTS (SELECT 1 FROM resource_access a WHERE a.key = c.key AND a.mirror = $2))
  ORDER BY c.seq LIMIT $3`;

const RESOURCES_SQL = `SELECT key, content_hash, content_text, content_format, content_status, title, url,
    type, source_type, server_instance_id, native_id, modified_at, fetched_at, fields::text, metadata::text,
    relations::text, attachments::text, provenance::text, deleted_at
  FROM resources WHERE key = ANY($1::text[])`;

// A probe of the key index per key (OFFSET 0 keeps it from being planned as a join): as
// `key = ANY(...)` or a join, a table not yet analyzed was read whole for each page.
export const ACCESS_SQL = `SELECT k.key, a.mirror, a.user_email, a.source FROM unnest($1::text[]) AS k(key)
  CROSS JOIN LATERAL (SELECT mirror, user_email, source FROM resource_access a
    WHERE a.key = k.key AND ($2::text IS NULL OR a.mirror = $2) OFFSET 0) a
  ORDER BY a.mirror COLLATE "C", a.user_email COLLATE "C"`;

export async function readChanges(pool: pg.Pool, q: FeedQuery): Promise<FeedPage> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    try {
      return await readPage(client, q);
    } finally {
      await client.query("COMMIT").catch((error: Error) => {
        broken = error;
      });
    }
  } finally {
    client.release(broken);
  }
}

async function readPage(client: pg.PoolClient, q: FeedQuery): Promise<FeedPage> {
  const mirror = q.mirror ?? null;
  const rows = (await client.query<Row>(PAGE_SQL, [q.after, mirror, q.limit + 1])).rows;
  const hasMore = rows.length > q.limit;
  const page = rows.slice(0, q.limit);
  const keys = [...new Set(page.map((c) => c.key as string))];
  const resources = new Map(
    (await client.query<Row>(RESOURCES_SQL, [keys])).rows.map((r) => [r.key as string, toResource(r)]),
  );
  const access = new Map<string, FeedAccess[]>();
  for (const a of (await client.query<Row>(ACCESS_SQL, [keys, mirror])).rows) {
    const list = access.get(a.key as string) ?? [];
    list.push({ mirror: a.mirror as string, userEmail: a.user_email as string, source: a.source as string });
    access.set(a.key as string, list);
  }
  const newest = Number(
    (await client.query<{ n: string | null }>("SELECT max(seq) AS n FROM changes")).rows[0]?.n ?? 0,
  );
  const last = (page.at(-1)?.seq as number | undefined) ?? q.after;
  return {
    changes: page.map((c) => ({
      seq: c.seq as number,
      key: c.key as string,
      op: c.op as FeedPage["changes"][number]["op"],
      at: toIso(c.at as Date),
      resource: resources.get(c.key as string) ?? null,
      access: access.get(c.key as string) ?? [],
    })),
    // Caught up: skip past changes a mirror filter left out, so they are not scanned again; a
    // cursor past the newest seq (another database's) comes back to it rather than skip what follows.
    nextAfter: hasMore ? last : newest,
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
