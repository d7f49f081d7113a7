/**
 * An exported resource as the mirror stores it: text the database can hold, JSON parts serialized
 * (or the reason a resource cannot be stored, which rejects it alone).
 */

import type { Resource } from "../api/schemas.js";
import { stringifyExact } from "../exact-json.js";
import type { ResourceInput, ResourceWrite } from "../store/types.js";
import { exportTime } from "./time.js";

const JSON_PARTS = ["fields", "metadata", "relations", "attachments", "provenance"] as const;

const json = (v: unknown): string | null => (v === undefined || v === null ? null : stringifyExact(v));

/**
 * The resource with its JSON parts serialized. A value JSON.stringify cannot serialize (nesting
 * deeper than the stack allows: JSON.parse accepted it) is that resource's problem, not the
 * page's: it is rejected alone before anything of it is written.
 */
export function serialize(r: ResourceInput): ResourceWrite | { path: string | undefined; reason: string } {
  try {
    return {
      ...r,
      fields: json(r.fields),
      metadata: json(r.metadata),
      relations: json(r.relations),
      attachments: json(r.attachments),
      provenance: json(r.provenance),
    };
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    const path = JSON_PARTS.find((part) => {
      try {
        JSON.stringify(r[part]);
        return false;
      } catch {
        return true;
      }
    });
    return { path, reason: `cannot be stored as JSON (${error.message}): nested too deeply or too large` };
  }
}

export function keyOf(raw: unknown): string | undefined {
  const key = (raw as { key?: unknown } | null)?.key;
  return typeof key === "string" ? key : undefined;
}

/** The server a resource refused for its shape names, when it names one. */
export function serverOf(raw: unknown): string | null {
  const server = (raw as { server_instance_id?: unknown } | null)?.server_instance_id;
  return typeof server === "string" ? server : null;
}

/**
 * SQLite text is UTF-8, which cannot hold an unpaired UTF-16 surrogate (JSON allows `"\ud800"`):
 * better-sqlite3 would write bytes that are not UTF-8, which other readers of the mirror refuse.
 * Each one becomes U+FFFD, and the resource says so. JSON columns keep them, escaped.
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

export function toInput(r: Resource): { input: ResourceInput; source: string; textRepaired: boolean } {
  let textRepaired = false;
  const text = <T extends string | null>(value: T): T => {
    if (value === null || !/[\uD800-\uDFFF]/.test(value)) return value;
    const repaired = value.replace(LONE_SURROGATE, "\uFFFD");
    textRepaired ||= repaired !== value;
    return repaired as T;
  };
  const input: ResourceInput = {
    key: text(r.key),
    contentHash: text(r.content_hash),
    contentText: text(r.content?.text ?? null),
    contentFormat: text(r.content?.format ?? null),
    contentStatus: text(r.content_status ?? null),
    title: text(r.title ?? null),
    url: text(r.url ?? null),
    type: text(r.type ?? null),
    sourceType: text(r.source_type),
    serverInstanceId: text(r.server_instance_id),
    nativeId: text(r.native_id),
    modifiedAt: exportTime(r.modified_at),
    fetchedAt: exportTime(r.fetched_at),
    fields: r.fields,
    metadata: r.metadata,
    relations: r.relations,
    attachments: r.attachments,
    provenance: r.provenance,
  };
  return { input, source: text(r.source), textRepaired };
}
