/**
 * Reading the public `changes` feed with what a consumer needs to apply each change: the key's
 * current row (its tombstone once deleted) and its current access list. One read transaction, so a page
 * is a consistent snapshot even while the daemon commits.
 */
import type Database from "better-sqlite3";
import { parseJsonExact } from "../../exact-json.js";
import type { FeedAccess, FeedChange, FeedPage, FeedQuery, FeedResource } from "../consumer-types.js";

type ResourceRow = Omit<FeedResource, "fields" | "metadata" | "relations" | "attachments" | "provenance"> &
  Record<"fields" | "metadata" | "relations" | "attachments" | "provenance", string | null>;

const JSON_COLUMNS = ["fields", "metadata", "relations", "attachments", "provenance"] as const;

export async function readChanges(sqlite: Database.Database, q: FeedQuery): Promise<FeedPage> {
  return sqlite.transaction(() => readPage(sqlite, q)).deferred();
}

function readPage(sqlite: Database.Database, q: FeedQuery): FeedPage {
  const mirror = q.mirror ?? null;
  const rows = sqlite
    .prepare<[Record<string, unknown>], Omit<FeedChange, "resource" | "access">>(
      `SELECT seq, key, op, at FROM changes c WHERE seq > @after
         AND (@mirror IS NULL OR c.mirror = @mirror
              OR EXISTS (SELECT 1 FROM resource_access a WHERE a.key = c.key AND a.mirror = @mirror))
       ORDER BY seq LIMIT @limit`,
    )
    .all({ after: q.after, mirror, limit: q.limit + 1 });
  const hasMore = rows.length > q.limit;
  const page = rows.slice(0, q.limit);
  const keys = JSON.stringify([...new Set(page.map((c) => c.key))]);
  const resources = new Map(
    sqlite
      .prepare<[string], ResourceRow>(
        `SELECT key, content_hash AS contentHash, content_text AS contentText,
                content_format AS contentFormat, content_status AS contentStatus, title, url, type,
                source_type AS sourceType, server_instance_id AS serverInstanceId, native_id AS nativeId,
                modified_at AS modifiedAt, fetched_at AS fetchedAt, fields, metadata, relations,
                attachments, provenance, deleted_at AS deletedAt
         FROM resources WHERE key IN (SELECT value FROM json_each(?))`,
      )
      .all(keys)
      .map((r) => [r.key, toResource(r)]),
  );
  const access = new Map<string, FeedAccess[]>();
  for (const a of sqlite
    .prepare<[Record<string, unknown>], FeedAccess & { key: string }>(
      `SELECT key, mirror, user_email AS userEmail, source FROM resource_access
       WHERE key IN (SELECT value FROM json_each(@keys)) AND (@mirror IS NULL OR mirror = @mirror)
       ORDER BY mirror, user_email`,
    )
    .all({ keys, mirror })) {
    const list = access.get(a.key) ?? [];
    list.push({ mirror: a.mirror, userEmail: a.userEmail, source: a.source });
    access.set(a.key, list);
  }
  const newest = (sqlite.prepare("SELECT max(seq) AS n FROM changes").get() as { n: number | null }).n ?? 0;
  const last = page.at(-1)?.seq ?? q.after;
  return {
    changes: page.map((c) => ({
      ...c,
      resource: resources.get(c.key) ?? null,
      access: access.get(c.key) ?? [],
    })),
    // Caught up: skip past changes a mirror filter left out, so they are not scanned again; a
    // cursor past the newest seq (another database's) comes back to it rather than skip what follows.
    nextAfter: hasMore ? last : newest,
    hasMore,
  };
}

function toResource(row: ResourceRow): FeedResource {
  const resource: FeedResource = { ...row };
  for (const column of JSON_COLUMNS) {
    const text = row[column];
    resource[column] = text === null ? null : parseJsonExact(text);
  }
  return resource;
}
