/**
 * For the consumer suite: turning search and the HTTP token on in a harness's config, searching
 * the real database (the suite's dialect) as a user, and the live state a consumer of the feed
 * must end up with.
 */
import { readFileSync, writeFileSync } from "node:fs";
import Database from "better-sqlite3";
import { parse, stringify } from "yaml";
import { loadConfig } from "../../src/config.js";
import { silentLogger } from "../../src/log.js";
import { openStore } from "../../src/store/open-store.js";
import { TEST_DIALECT } from "./dialect.js";
import type { Harness } from "./mirror-harness.js";

export const HTTP_TOKEN_ENV = "SYNCMIRROR_TEST_HTTP_TOKEN";
export const HTTP_TOKEN = "test-http-token-5f1c9a7e2b";

/** GET `path` of the daemon on loopback `port` with the bearer token: its JSON, once it answers 200. */
export async function authorizedJson<T>(port: number, path: string): Promise<T> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    headers: { Authorization: `Bearer ${HTTP_TOKEN}` },
  });
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** Sets `search.enabled` and `http.token_env` in the harness's config and the token in its env. */
export function configureConsumers(h: Harness, options: { search: boolean }): void {
  const config = parse(readFileSync(h.configPath, "utf8")) as Record<string, Record<string, unknown>>;
  config.search = { enabled: options.search };
  config.http = { ...config.http, token_env: HTTP_TOKEN_ENV };
  writeFileSync(h.configPath, stringify(config));
  h.env[HTTP_TOKEN_ENV] = HTTP_TOKEN;
}

/** Keys `user` finds for `query`, through the same code the CLI and HTTP use. */
export async function searchKeys(
  h: Harness,
  user: string,
  query: string,
  mirror?: string,
): Promise<string[]> {
  const store = await openStore(loadConfig(h.configPath, h.env), { lock: false, log: silentLogger() });
  try {
    const hits = await store.search.query({ userEmail: user, query, mirror, limit: 100 });
    return hits.map((hit) => hit.key).sort();
  } finally {
    await store.close();
  }
}

/** The search index's objects in the database: none while search is off. */
export function searchIndexObjects(h: Harness): string[] {
  const sql =
    TEST_DIALECT === "sqlite"
      ? "SELECT name FROM sqlite_master WHERE name LIKE 'resources_fts%' ORDER BY name"
      : `SELECT column_name AS name FROM information_schema.columns
         WHERE table_name = 'resources' AND column_name = 'search_vector'
         UNION ALL SELECT indexname FROM pg_indexes WHERE indexname = 'resources_search'`;
  return h.query<{ name: string }>(sql).map((r) => r.name);
}

/** SQLite: keys in the FTS5 index, and live keys: equal whenever the index is consistent. */
export function indexedAndLiveKeys(h: Harness): { indexed: string[]; live: string[] } {
  return {
    indexed: h
      .query<{ key: string }>(
        "SELECT k.key FROM resources_fts f JOIN resources_fts_keys k ON k.id = f.rowid ORDER BY k.key",
      )
      .map((r) => r.key),
    live: h
      .query<{ key: string }>("SELECT key FROM resources WHERE deleted_at IS NULL ORDER BY key")
      .map((r) => r.key),
  };
}

/** FTS5's own check that the index matches the text it was built from: "ok" or its complaint. */
export function ftsIntegrity(h: Harness): string {
  const db = new Database(h.dbPath);
  try {
    db.prepare("INSERT INTO resources_fts (resources_fts, rank) VALUES ('integrity-check', 1)").run();
    return "ok";
  } catch (error) {
    return (error as Error).message;
  } finally {
    db.close();
  }
}

export interface IndexedDoc {
  title: string | null;
  contentHash: string;
  users: string[];
}

/** What a feed consumer's index must equal: every live key, its title, hash and users. */
export function liveState(h: Harness): Record<string, IndexedDoc> {
  const state: Record<string, IndexedDoc> = {};
  const rows = h.query<{ key: string; title: string | null; content_hash: string }>(
    "SELECT key, title, content_hash FROM resources WHERE deleted_at IS NULL",
  );
  for (const r of rows) state[r.key] = { title: r.title, contentHash: r.content_hash, users: [] };
  const access = h.query<{ key: string; user_email: string }>(
    "SELECT DISTINCT key, user_email FROM resource_access",
  );
  for (const a of access) state[a.key]?.users.push(a.user_email);
  for (const doc of Object.values(state)) doc.users.sort();
  return state;
}
