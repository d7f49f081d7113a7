/**
 * Reference client: the limit. Triggers, waits for the runs with the mirror's poll schedule, then
 * fetches every export page with the mirror's concurrency over undici (the mirror's HTTP client)
 * and parses it with JSON.parse; nothing else (mode `fetch`: the network + JSON limit). In mode
 * `store` it also writes the rows the mirror keeps, with bare better-sqlite3 prepared INSERTs
 * inside one transaction for the whole export (the storage limit): each key's content once, and
 * one (user, key) row per exported resource; no hash lookups, no change feed, no secondary
 * indexes. The time spent in those writes is reported on its own.
 *
 * Env: LIMIT_MODE (fetch | store), LIMIT_BASE_URL, LIMIT_TOKEN_ENV, LIMIT_CONFIG_ID,
 * LIMIT_CONCURRENCY, LIMIT_POLL_MS, LIMIT_POLL_MAX_MS, LIMIT_DB (store). Prints one JSON object.
 */
import Database from "better-sqlite3";
import { Agent, request } from "undici";
import { RESOURCE_COLUMNS } from "../src/store/resources.js";

interface Row {
  key: string;
  content_hash: string;
  content?: { format?: string | null; text?: string | null } | null;
  [field: string]: unknown;
}

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const mode = env("LIMIT_MODE");
const baseUrl = env("LIMIT_BASE_URL");
const headers = {
  authorization: `Bearer ${env(env("LIMIT_TOKEN_ENV"))}`,
  "content-type": "application/json",
};
const agent = new Agent({ keepAliveTimeout: 10_000 });

async function get<T>(path: string): Promise<T> {
  const response = await request(`${baseUrl}${path}`, { method: "GET", headers, dispatcher: agent });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new Error(`GET ${path}: ${response.statusCode} ${text}`);
  return JSON.parse(text) as T;
}

const posted = await request(`${baseUrl}/sync-task`, {
  method: "POST",
  headers,
  body: JSON.stringify({ sync_config_id: env("LIMIT_CONFIG_ID") }),
  dispatcher: agent,
});
const trigger = JSON.parse(await posted.body.text()) as {
  trigger_id: string;
  runs: { sync_id: string; user_email: string }[];
};

// Wait like the mirror: list the trigger's runs 100 at a time, backing off between rounds.
let delayMs = Number(env("LIMIT_POLL_MS"));
for (;;) {
  let unfinished = 0;
  let cursor: string | null | undefined;
  do {
    const page: {
      items: { status: string }[];
      meta: { next_cursor?: string | null; has_next?: boolean };
    } = await get(
      `/sync-task?trigger_id=${trigger.trigger_id}&size=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
    );
    unfinished += page.items.filter((r) => !["completed", "incomplete", "failed"].includes(r.status)).length;
    cursor = page.meta.has_next ? page.meta.next_cursor : null;
  } while (cursor);
  if (unfinished === 0) break;
  await new Promise((resolve) => setTimeout(resolve, delayMs));
  delayMs = Math.min(delayMs * 2, Number(env("LIMIT_POLL_MAX_MS")));
}

const store = mode === "store" ? openBareStore(env("LIMIT_DB")) : undefined;
let rows = 0;
let pages = 0;
let bytes = 0;
let writeMs = 0;
const keys = new Set<string>();
const contentChars: number[] = [];
const queue = [...trigger.runs];
async function worker(): Promise<void> {
  for (let run = queue.shift(); run; run = queue.shift()) {
    let offset: number | null = 0;
    while (offset !== null) {
      const response = await request(
        `${baseUrl}/sync-task/${run.sync_id}/export?offset=${offset}&limit=500`,
        {
          method: "GET",
          headers,
          dispatcher: agent,
        },
      );
      const text = await response.body.text();
      if (response.statusCode !== 200) throw new Error(`export ${run.sync_id}: ${response.statusCode}`);
      const page = JSON.parse(text) as { resources: Row[]; page: { next_offset: number | null } };
      bytes += text.length;
      pages++;
      rows += page.resources.length;
      for (const r of page.resources) {
        keys.add(r.key);
        contentChars.push(r.content?.text?.length ?? 0);
      }
      if (store) writeMs += store.write(run.user_email, page.resources);
      offset = page.page.next_offset;
    }
  }
}
await Promise.all(Array.from({ length: Number(env("LIMIT_CONCURRENCY")) }, worker));
if (store) writeMs += store.commit();
await agent.close();
contentChars.sort((a, b) => a - b);
process.stdout.write(
  `${JSON.stringify({
    runs: trigger.runs.length,
    rows,
    uniqueKeys: keys.size,
    pages,
    bytes,
    writeMs,
    medianContentChars: contentChars[contentChars.length >> 1] ?? 0,
  })}\n`,
);

/** Bare tables: content once per key, and who saw which key; one transaction for everything. */
function openBareStore(path: string) {
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  const columns = RESOURCE_COLUMNS;
  db.exec(`CREATE TABLE resources (${columns.map((c) => `${c} TEXT`).join(", ")})`);
  db.exec("CREATE TABLE access (user_email TEXT, key TEXT)");
  const insertResource = db.prepare(`INSERT INTO resources VALUES (${columns.map(() => "?").join(", ")})`);
  const insertAccess = db.prepare("INSERT INTO access VALUES (?, ?)");
  const written = new Set<string>();
  const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));
  const text = (v: unknown) => (typeof v === "string" ? v : null);
  db.exec("BEGIN");
  return {
    /** Milliseconds spent writing the page. */
    write(userEmail: string, resources: Row[]): number {
      const started = performance.now();
      for (const r of resources) {
        insertAccess.run(userEmail, r.key);
        if (written.has(r.key)) continue;
        written.add(r.key);
        insertResource.run(
          r.key,
          r.content_hash,
          r.content?.text ?? null,
          r.content?.format ?? null,
          text(r.content_status),
          text(r.title),
          text(r.url),
          text(r.type),
          text(r.source_type),
          text(r.server_instance_id),
          text(r.native_id),
          text(r.modified_at),
          text(r.fetched_at),
          json(r.fields),
          json(r.metadata),
          json(r.relations),
          json(r.attachments),
          json(r.provenance),
        );
      }
      return performance.now() - started;
    },
    commit(): number {
      const started = performance.now();
      db.exec("COMMIT");
      db.close();
      return performance.now() - started;
    },
  };
}
