/**
 * Reference client: the pattern of the service's documentation example, run as its own measured
 * process. Trigger; poll each run in turn (one GET per unfinished run per round) with a fixed
 * sleep between rounds; then for each run collect its whole export in memory (every page) and
 * upsert it row by row, each statement its own transaction, with no content-hash check.
 *
 * It writes the mirror's own schema (same migrations, same WAL / synchronous=NORMAL pragmas), so
 * the comparison is about the client pattern, not the database settings.
 *
 * Env: NAIVE_BASE_URL, NAIVE_TOKEN_ENV (the name of the variable holding the token),
 * NAIVE_CONFIG_ID, NAIVE_DB, NAIVE_SLEEP_MS. Prints one JSON object on stdout.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import { RESOURCE_COLUMNS } from "../src/store/types.js";

const FINISHED = new Set(["completed", "incomplete", "failed"]);

interface ExportResource {
  key: string;
  source: string;
  source_type: string;
  server_instance_id: string;
  native_id: string;
  type?: string | null;
  title?: string | null;
  url?: string | null;
  modified_at?: string | null;
  fetched_at?: string | null;
  content?: { format?: string | null; text?: string | null } | null;
  content_status?: string | null;
  fields?: unknown;
  metadata?: unknown;
  relations?: unknown;
  attachments?: unknown;
  content_hash: string;
  provenance?: unknown;
}

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const baseUrl = env("NAIVE_BASE_URL");
const token = env(env("NAIVE_TOKEN_ENV"));
const sleepMs = Number(env("NAIVE_SLEEP_MS"));
const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers,
    body: body === undefined ? null : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

const sqlite = new Database(env("NAIVE_DB"));
sqlite.pragma("journal_mode = WAL");
sqlite.pragma("synchronous = NORMAL");
migrate(drizzle(sqlite), { migrationsFolder: join(import.meta.dirname, "..", "..", "migrations") });
const columns = [...RESOURCE_COLUMNS, "updated_at"];
const upsertResource = sqlite.prepare(
  `INSERT INTO resources (${columns.join(", ")}) VALUES (${columns.map((c) => `@${c}`).join(", ")})
   ON CONFLICT(key) DO UPDATE SET ${columns
     .slice(1)
     .map((c) => `${c} = excluded.${c}`)
     .join(", ")}`,
);
const upsertAccess = sqlite.prepare(
  `INSERT INTO resource_access (mirror, user_email, key, server_instance_id, source, last_seen_at)
   VALUES (@mirror, @user_email, @key, @server_instance_id, @source, @last_seen_at)
   ON CONFLICT(mirror, user_email, key) DO UPDATE SET source = excluded.source, last_seen_at = excluded.last_seen_at`,
);
const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));

const trigger = await api<{ runs: { sync_id: string; user_email: string }[] }>("POST", "/sync-task", {
  sync_config_id: env("NAIVE_CONFIG_ID"),
});
const callsPerRound: number[] = [];
const pending = new Set(trigger.runs.map((r) => r.sync_id));
const createdAt = new Map<string, string>();
while (pending.size > 0) {
  let calls = 0;
  for (const syncId of [...pending]) {
    const run = await api<{ status: string; created_at: string }>("GET", `/sync-task/${syncId}`);
    calls++;
    createdAt.set(syncId, run.created_at);
    if (FINISHED.has(run.status)) pending.delete(syncId);
  }
  callsPerRound.push(calls);
  if (pending.size > 0) await new Promise((resolve) => setTimeout(resolve, sleepMs));
}

let rows = 0;
let exportCalls = 0;
for (const run of trigger.runs) {
  const all: ExportResource[] = [];
  let offset: number | null = 0;
  while (offset !== null) {
    const page: { resources: ExportResource[]; page: { next_offset: number | null } } = await api(
      "GET",
      `/sync-task/${run.sync_id}/export?offset=${offset}&limit=500`,
    );
    exportCalls++;
    all.push(...page.resources);
    offset = page.page.next_offset;
  }
  const now = new Date().toISOString();
  for (const r of all) {
    upsertResource.run({
      key: r.key,
      content_hash: r.content_hash,
      content_text: r.content?.text ?? null,
      content_format: r.content?.format ?? null,
      content_status: r.content_status ?? null,
      title: r.title ?? null,
      url: r.url ?? null,
      type: r.type ?? null,
      source_type: r.source_type,
      server_instance_id: r.server_instance_id,
      native_id: r.native_id,
      modified_at: r.modified_at ?? null,
      fetched_at: r.fetched_at ?? null,
      fields: json(r.fields),
      metadata: json(r.metadata),
      relations: json(r.relations),
      attachments: json(r.attachments),
      provenance: json(r.provenance),
      updated_at: now,
    });
    upsertAccess.run({
      mirror: "bench",
      user_email: run.user_email,
      key: r.key,
      server_instance_id: r.server_instance_id,
      source: r.source,
      last_seen_at: createdAt.get(run.sync_id) ?? now,
    });
    rows++;
  }
}
sqlite.close();
process.stdout.write(`${JSON.stringify({ runs: trigger.runs.length, rows, exportCalls, callsPerRound })}\n`);
