/**
 * The public `resources` table: content deduplicated by key, tombstones for keys nobody can see.
 */
import { eq, sql } from "drizzle-orm";
import type { Db } from "./db.js";
import { resources } from "./schema.js";

/** A resource as the mirror stores it: the export's resource, validated, JSON parts as objects. */
export interface ResourceInput {
  key: string;
  contentHash: string;
  contentText: string | null;
  contentFormat: string | null;
  contentStatus: string | null;
  title: string | null;
  url: string | null;
  type: string | null;
  sourceType: string;
  serverInstanceId: string;
  nativeId: string;
  modifiedAt: string | null;
  fetchedAt: string | null;
  fields: unknown;
  metadata: unknown;
  relations: unknown;
  attachments: unknown;
  provenance: unknown;
}

export interface StoredResourceState {
  contentHash: string;
  deletedAt: string | null;
}

const json = (v: unknown): string | null => (v === undefined || v === null ? null : JSON.stringify(v));
const p = (name: string) => sql.placeholder(name);

/** The columns that come from an exported resource, `key` first (benchmarks and tests reuse it). */
export const RESOURCE_COLUMNS = [
  "key",
  "content_hash",
  "content_text",
  "content_format",
  "content_status",
  "title",
  "url",
  "type",
  "source_type",
  "server_instance_id",
  "native_id",
  "modified_at",
  "fetched_at",
  "fields",
  "metadata",
  "relations",
  "attachments",
  "provenance",
] as const;

/** Every column `write` sets, in the order of its parameters. */
const WRITTEN = [...RESOURCE_COLUMNS, "engine_version", "updated_at"] as const;

export function createResourceStore(db: Db) {
  // The two statements every exported row runs are plain better-sqlite3 statements with
  // positional parameters: drizzle's per-call placeholder mapping cost more than the SQLite work.
  const sqlite = db.$client;
  const findState = sqlite.prepare<[string], StoredResourceState>(
    "SELECT content_hash AS contentHash, deleted_at AS deletedAt FROM resources WHERE key = ?",
  );
  const upsert = sqlite.prepare<unknown[]>(
    `INSERT INTO resources (${WRITTEN.join(", ")}, deleted_at) VALUES (${WRITTEN.map(() => "?").join(", ")}, NULL)
     ON CONFLICT (key) DO UPDATE SET ${[...WRITTEN.slice(1), "deleted_at"].map((c) => `${c} = excluded.${c}`).join(", ")}`,
  );

  const tombstone = db
    .update(resources)
    .set({
      deletedAt: p("at") as unknown as string,
      updatedAt: p("at") as unknown as string,
      contentText: null,
      fields: null,
      metadata: null,
      relations: null,
      attachments: null,
      provenance: null,
    })
    .where(eq(resources.key, p("key")))
    .prepare();

  return {
    findState(key: string): StoredResourceState | undefined {
      return findState.get(key);
    },

    /** Writes the resource (new, changed, or back from a tombstone). */
    write(r: ResourceInput, engineVersion: string | null, at: string): void {
      upsert.run(
        r.key,
        r.contentHash,
        r.contentText,
        r.contentFormat,
        r.contentStatus,
        r.title,
        r.url,
        r.type,
        r.sourceType,
        r.serverInstanceId,
        r.nativeId,
        r.modifiedAt,
        r.fetchedAt,
        json(r.fields),
        json(r.metadata),
        json(r.relations),
        json(r.attachments),
        json(r.provenance),
        engineVersion,
        at,
      );
    },

    /** Keeps the row as a tombstone: `deleted_at` set, content and JSON parts cleared. */
    tombstone(key: string, at: string): void {
      tombstone.run({ key, at });
    },
  };
}

export type ResourceStore = ReturnType<typeof createResourceStore>;
