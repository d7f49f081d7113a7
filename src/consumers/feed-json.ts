/**
 * The JSON shapes of `/v1/changes`, `/v1/search` and the `changes` / `search` commands: the
 * public tables' snake_case column names, so a consumer reading the feed and one reading the
 * database see the same fields, whichever the dialect.
 */
import type { FeedPage, FeedResource, SearchHit } from "../store/consumer-types.js";

export function feedPageJson(page: FeedPage) {
  return {
    changes: page.changes.map((c) => ({
      seq: c.seq,
      key: c.key,
      op: c.op,
      at: c.at,
      resource: c.resource === null ? null : resourceJson(c.resource),
      access: c.access.map((a) => ({ mirror: a.mirror, user_email: a.userEmail, source: a.source })),
    })),
    next_after: page.nextAfter,
    has_more: page.hasMore,
  };
}

export function searchJson(hits: readonly SearchHit[]) {
  return {
    results: hits.map((h) => ({
      key: h.key,
      title: h.title,
      url: h.url,
      source_type: h.sourceType,
      snippet: h.snippet,
    })),
  };
}

function resourceJson(r: FeedResource) {
  return {
    key: r.key,
    content_hash: r.contentHash,
    content_text: r.contentText,
    content_format: r.contentFormat,
    content_status: r.contentStatus,
    title: r.title,
    url: r.url,
    type: r.type,
    source_type: r.sourceType,
    server_instance_id: r.serverInstanceId,
    native_id: r.nativeId,
    modified_at: r.modifiedAt,
    fetched_at: r.fetchedAt,
    fields: r.fields,
    metadata: r.metadata,
    relations: r.relations,
    attachments: r.attachments,
    provenance: r.provenance,
    // Every public column: a deleted key's row is its tombstone, as the table keeps it.
    deleted_at: r.deletedAt,
  };
}
