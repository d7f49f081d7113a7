/**
 * The public `resources` table: content deduplicated by key, tombstones for keys nobody can see.
 */
import { eq } from "drizzle-orm";
import { p, value } from "../placeholders.js";
import type { ResourceRepo } from "../store.js";
import { RESOURCE_COLUMNS, type ResourceWrite, type StoredResourceState } from "../types.js";
import type { Db } from "./open.js";
import { resources } from "./schema.js";
import type { Sync } from "./sync-repo.js";

/** Every column `writeAll` sets, in the order of its parameters. */
const WRITTEN = [...RESOURCE_COLUMNS, "engine_version", "updated_at"] as const;

export function createResourceRepo(db: Db): Sync<ResourceRepo> {
  // The two statements every exported row runs are plain better-sqlite3 statements with
  // positional parameters: drizzle's per-call placeholder mapping cost more than the SQLite work.
  const sqlite = db.$client;
  const findState = sqlite.prepare<[string], StoredResourceState>(
    "SELECT content_hash AS contentHash, deleted_at AS deletedAt, updated_at AS updatedAt FROM resources WHERE key = ?",
  );
  // A page's keys in one statement: 500 lookups took 35% less CPU than one statement each (a
  // page's keys are distinct; json_each hands them over without a placeholder per key).
  const findStatesOf = sqlite.prepare<[string], StoredResourceState & { key: string }>(
    `SELECT key, content_hash AS contentHash, deleted_at AS deletedAt, updated_at AS updatedAt
       FROM resources WHERE key IN (SELECT value FROM json_each(?))`,
  );
  const upsert = sqlite.prepare<unknown[]>(
    `INSERT INTO resources (${WRITTEN.join(", ")}, deleted_at) VALUES (${WRITTEN.map(() => "?").join(", ")}, NULL)
     ON CONFLICT (key) DO UPDATE SET ${[...WRITTEN.slice(1), "deleted_at"].map((c) => `${c} = excluded.${c}`).join(", ")}`,
  );

  const tombstone = db
    .update(resources)
    .set({
      deletedAt: value("at"),
      updatedAt: value("at"),
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

    findStates(keys) {
      const states = new Map<string, StoredResourceState>();
      for (const { key, ...state } of findStatesOf.all(JSON.stringify(keys))) states.set(key, state);
      return states;
    },

    writeAll(rows: readonly ResourceWrite[], engineVersion: string | null, at: string): void {
      for (const r of rows) {
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
          r.fields,
          r.metadata,
          r.relations,
          r.attachments,
          r.provenance,
          engineVersion,
          at,
        );
      }
    },

    tombstoneAll(keys: readonly string[], at: string): void {
      for (const key of keys) tombstone.run({ key, at });
    },

    // Write transactions already run one at a time (BEGIN IMMEDIATE): nothing to wait for.
    holdOffTombstones(): void {},
    lockTombstones(): void {},
  };
}
