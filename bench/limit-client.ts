/**
 * Reference client: the limit. Triggers, waits for the runs with the mirror's poll schedule, then
 * fetches every export page, as large as the mirror's (LIMIT_PAGE_SIZE), with as many requests in flight as the mirror keeps (LIMIT_IN_FLIGHT)
 * over undici (the mirror's HTTP client) and parses it with JSON.parse; nothing else (mode `fetch`: the network + JSON limit). In mode
 * `store` (SQLite) or `pg-store` (PostgreSQL) it also writes the rows the mirror keeps in one bare
 * transaction (the storage limit, bench/bare-store.ts). The time spent in those writes is reported on its own.
 *
 * Env: LIMIT_MODE (fetch | store | pg-store), LIMIT_BASE_URL, LIMIT_TOKEN_ENV, LIMIT_CONFIG_ID,
 * LIMIT_IN_FLIGHT, LIMIT_PAGE_SIZE, LIMIT_POLL_MS, LIMIT_POLL_MAX_MS, LIMIT_DB (store), LIMIT_PG_URL (pg-store).
 * Prints one JSON object.
 */
import { Agent, request } from "undici";
import { type BareStore, openPgBareStore, openSqliteBareStore, type Row } from "./bare-store.js";

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const mode = env("LIMIT_MODE");
const pageSize = Number(env("LIMIT_PAGE_SIZE"));
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

const stores: Record<string, (() => Promise<BareStore>) | undefined> = {
  store: async () => openSqliteBareStore(env("LIMIT_DB")),
  "pg-store": () => openPgBareStore(env("LIMIT_PG_URL")),
};
const store = await stores[mode]?.();
let rows = 0;
let pages = 0;
let bytes = 0;
let writeMs = 0;
const keys = new Set<string>();
const contentChars: number[] = [];
// The mirror's paging: a run's first page gives its total, then its other pages are requested
// ahead, with at most LIMIT_IN_FLIGHT export requests open at once across all runs.
interface Job {
  run: { sync_id: string; user_email: string };
  offset: number;
}
const jobs: Job[] = trigger.runs.map((run) => ({ run, offset: 0 }));
let busy = 0;
let waiting: (() => void)[] = [];
const wakeAll = () => {
  const woken = waiting;
  waiting = [];
  for (const wake of woken) wake();
};
async function worker(): Promise<void> {
  for (;;) {
    const job = jobs.shift();
    if (!job) {
      if (busy === 0) return wakeAll();
      await new Promise<void>((resolve) => waiting.push(resolve));
      continue;
    }
    busy++;
    const response = await request(
      `${baseUrl}/sync-task/${job.run.sync_id}/export?offset=${job.offset}&limit=${pageSize}`,
      { method: "GET", headers, dispatcher: agent },
    );
    const text = await response.body.text();
    if (response.statusCode !== 200) throw new Error(`export ${job.run.sync_id}: ${response.statusCode}`);
    const page = JSON.parse(text) as {
      resources: Row[];
      page: { total: number; next_offset: number | null };
    };
    const stride = page.page.next_offset;
    if (job.offset === 0 && stride !== null) {
      const rest: Job[] = [];
      for (let offset = stride; offset < page.page.total; offset += stride)
        rest.push({ run: job.run, offset });
      // Ahead of other runs' first pages: one run's pages are read before the next run starts.
      jobs.unshift(...rest);
    }
    bytes += text.length;
    pages++;
    rows += page.resources.length;
    for (const r of page.resources) {
      keys.add(r.key);
      contentChars.push(r.content?.text?.length ?? 0);
    }
    if (store) writeMs += await store.write(job.run.user_email, page.resources);
    busy--;
    wakeAll();
  }
}
await Promise.all(Array.from({ length: Number(env("LIMIT_IN_FLIGHT")) }, worker));
if (store) writeMs += await store.commit();
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
