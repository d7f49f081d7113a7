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

export function createResourceStore(db: Db) {
  const findState = db
    .select({ contentHash: resources.contentHash, deletedAt: resources.deletedAt })
    .from(resources)
    .where(eq(resources.key, p("key")))
    .prepare();

  const upsert = db
    .insert(resources)
    .values({
      key: p("key"),
      contentHash: p("contentHash"),
      contentText: p("contentText"),
      contentFormat: p("contentFormat"),
      contentStatus: p("contentStatus"),
      title: p("title"),
      url: p("url"),
      type: p("type"),
      sourceType: p("sourceType"),
      serverInstanceId: p("serverInstanceId"),
      nativeId: p("nativeId"),
      modifiedAt: p("modifiedAt"),
      fetchedAt: p("fetchedAt"),
      fields: p("fields"),
      metadata: p("metadata"),
      relations: p("relations"),
      attachments: p("attachments"),
      provenance: p("provenance"),
      deletedAt: sql`NULL`,
      engineVersion: p("engineVersion"),
      updatedAt: p("updatedAt"),
    })
    .onConflictDoUpdate({
      target: resources.key,
      set: Object.fromEntries(
        [
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
          "deleted_at",
          "engine_version",
          "updated_at",
        ].map((c) => [camel(c), sql.raw(`excluded.${c}`)]),
      ),
    })
    .prepare();

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
      return findState.get({ key });
    },

    /** Writes the resource (new, changed, or back from a tombstone). */
    write(r: ResourceInput, engineVersion: string | null, at: string): void {
      upsert.run({
        ...r,
        fields: json(r.fields),
        metadata: json(r.metadata),
        relations: json(r.relations),
        attachments: json(r.attachments),
        provenance: json(r.provenance),
        engineVersion,
        updatedAt: at,
      });
    },

    /** Keeps the row as a tombstone: `deleted_at` set, content and JSON parts cleared. */
    tombstone(key: string, at: string): void {
      tombstone.run({ key, at });
    },
  };
}

export type ResourceStore = ReturnType<typeof createResourceStore>;

function camel(column: string): string {
  return column.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}
