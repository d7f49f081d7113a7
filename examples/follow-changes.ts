/**
 * A consumer of syncmirror's change feed over HTTP: follows /v1/changes from a saved seq and keeps
 * a tiny index (key -> title, content hash, who may see it) in a JSON file.
 *
 *   SYNCMIRROR_URL=http://127.0.0.1:9464 SYNCMIRROR_HTTP_TOKEN=... npx tsx examples/follow-changes.ts index.json
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export interface Entry {
  title: string | null;
  contentHash: string;
  users: string[];
}
export interface State {
  after: number;
  index: Record<string, Entry>;
}
interface Change {
  key: string;
  resource: { title: string | null; content_hash: string; deleted_at: string | null } | null;
  access: { user_email: string }[];
}
interface Page {
  changes: Change[];
  next_after: number;
  has_more: boolean;
}

/** Reads pages until caught up (`waitSeconds` > 0: long-polls once caught up for up to that long). */
export async function catchUp(baseUrl: string, token: string, state: State, waitSeconds = 0): Promise<State> {
  for (;;) {
    const url = `${baseUrl}/v1/changes?after=${state.after}&limit=500&wait=${waitSeconds}`;
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    if (!res.ok) throw new Error(`GET /v1/changes answered ${res.status}: ${await res.text()}`);
    const page = (await res.json()) as Page;
    for (const c of page.changes) {
      // Each change carries the key's current row: a tombstone (deleted_at set) means gone; else replace.
      if (c.resource === null || c.resource.deleted_at !== null) delete state.index[c.key];
      else
        state.index[c.key] = {
          title: c.resource.title,
          contentHash: c.resource.content_hash,
          users: [...new Set(c.access.map((a) => a.user_email))].sort(),
        };
    }
    state.after = page.next_after;
    if (!page.has_more) return state;
  }
}

async function main(file: string): Promise<void> {
  const { SYNCMIRROR_URL: url = "http://127.0.0.1:9464", SYNCMIRROR_HTTP_TOKEN: token } = process.env;
  if (!token) throw new Error("set SYNCMIRROR_HTTP_TOKEN");
  let state: State = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : { after: 0, index: {} };
  for (;;) {
    state = await catchUp(url, token, state, 30);
    // Saved after the index is updated, atomically: a crash re-reads at most one page.
    writeFileSync(`${file}.tmp`, JSON.stringify(state));
    renameSync(`${file}.tmp`, file);
    console.log(`seq ${state.after}: ${Object.keys(state.index).length} documents`);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main(process.argv[2] ?? "index.json");
