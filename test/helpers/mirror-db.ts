/**
 * Database and simulator views for the mirror suite's assertions: table contents without the
 * columns that depend on when things happened, the changes feed, pairs, and document pickers.
 */
import { expect } from "vitest";
import type { DocInfo } from "../../src/simulator/index.js";
import type { Harness } from "./mirror-harness.js";

export interface ChangeRow {
  seq: number;
  key: string;
  op: "upsert" | "delete" | "access";
}

export interface PairRowView {
  user_email: string;
  server_instance_id: string;
  watermark: string | null;
  awaiting_baseline: number;
  skip_reason: string | null;
  retired_reason: string | null;
}

export interface AccessRowView {
  user_email: string;
  key: string;
  server_instance_id: string;
  source: string;
}

/**
 * `resources` and `resource_access` as readers see them, without time columns (fetched_at,
 * updated_at, last_seen_at; deleted_at only as a flag): equal for two mirrors of the same data.
 */
export function mirrorContents(h: Harness): { resources: unknown[]; access: unknown[] } {
  return {
    resources: h.query(
      `SELECT key, content_hash, content_text, content_format, content_status, title, url, type,
              source_type, server_instance_id, native_id, modified_at, fields, metadata, relations,
              attachments, provenance, deleted_at IS NOT NULL AS deleted
       FROM resources ORDER BY key`,
    ),
    access: h.query(
      "SELECT mirror, user_email, key, server_instance_id, source FROM resource_access ORDER BY mirror, user_email, key",
    ),
  };
}

export function changes(h: Harness, afterSeq = 0): ChangeRow[] {
  return h.query<ChangeRow>("SELECT seq, key, op FROM changes WHERE seq > ? ORDER BY seq", afterSeq);
}

export function lastSeq(h: Harness): number {
  return h.query<{ n: number | null }>("SELECT max(seq) AS n FROM changes")[0]?.n ?? 0;
}

export function pairs(h: Harness): PairRowView[] {
  return h.query<PairRowView>(
    `SELECT user_email, server_instance_id, watermark, awaiting_baseline, skip_reason, retired_reason
     FROM pairs WHERE mirror = 'main' ORDER BY user_email, server_instance_id`,
  );
}

export function pairOf(h: Harness, userEmail: string, serverInstanceId: string): PairRowView | undefined {
  return pairs(h).find((p) => p.user_email === userEmail && p.server_instance_id === serverInstanceId);
}

/**
 * The mirror's access to one source type's resources: `rows` (user, key) as revocations and an
 * approval's `up_to` count them, `keys` each once, as `held_revocations` counts them.
 */
export function accessOfSourceType(h: Harness, sourceType: string): { rows: number; keys: number } {
  const [counts] = h.query<{ rows: number; keys: number }>(
    `SELECT count(*) AS rows, count(DISTINCT a.key) AS keys FROM resource_access a
       JOIN resources r ON r.key = a.key WHERE a.mirror = 'main' AND r.source_type = ?`,
    sourceType,
  );
  return counts ?? { rows: 0, keys: 0 };
}

export function accessRows(h: Harness, key?: string): AccessRowView[] {
  const where = key === undefined ? "" : "AND key = ?";
  return h.query<AccessRowView>(
    `SELECT user_email, key, server_instance_id, source FROM resource_access
     WHERE mirror = 'main' ${where} ORDER BY user_email, key`,
    ...(key === undefined ? [] : [key]),
  );
}

export interface ResourceRowView {
  key: string;
  content_hash: string;
  content_text: string | null;
  fields: string | null;
  metadata: string | null;
  relations: string | null;
  attachments: string | null;
  provenance: string | null;
  deleted_at: string | null;
}

/** A tombstone as `resourceRow` reads it: `deleted_at` set, content cleared (docs/reference/sync-semantics.md#deletions-and-changes). */
export const TOMBSTONE = {
  deleted_at: expect.any(String),
  content_text: null,
  fields: null,
  metadata: null,
  relations: null,
  attachments: null,
  provenance: null,
};

export function resourceRow(h: Harness, key: string): ResourceRowView | undefined {
  return h.query<ResourceRowView>(
    `SELECT key, content_hash, content_text, fields, metadata, relations, attachments, provenance, deleted_at
     FROM resources WHERE key = ?`,
    key,
  )[0];
}

export function countRows(h: Harness, table: "resources" | "resource_access" | "changes"): number {
  return h.query<{ n: number }>(`SELECT count(*) AS n FROM ${table}`)[0]?.n ?? 0;
}

/** Live documents matching `filter`, in key order: the first `n` (0: all); throws when there are fewer. */
export function pickDocs(h: Harness, n: number, filter: (d: DocInfo) => boolean): DocInfo[] {
  const docs = h.sim.docs
    .list()
    .filter((d) => !d.deleted && filter(d))
    .sort((a, b) => (a.key < b.key ? -1 : 1));
  if (docs.length < n)
    throw new Error(`the dataset has ${docs.length} matching documents, the test needs ${n}`);
  return n === 0 ? docs : docs.slice(0, n);
}

export function pickDoc(h: Harness, filter: (d: DocInfo) => boolean): DocInfo {
  return pickDocs(h, 1, filter)[0] as DocInfo;
}

/** The server-clock `created_at` of a trigger's runs (all runs of one trigger share it), in ms. */
export function runCreatedAtMs(h: Harness, triggerId: string | null): number {
  const run = h.sim.runs.list().find((r) => r.trigger_id === triggerId);
  if (!run) throw new Error(`no run of trigger ${triggerId}`);
  return Date.parse(run.created_at);
}

/** The `since` each run of a trigger was sent (the trigger body's since, as the service kept it). */
export function sinceSent(h: Harness, triggerId: string | null): (string | null)[] {
  return h.sim.runs
    .list()
    .filter((r) => r.trigger_id === triggerId)
    .map((r) => r.since);
}
