/**
 * The same consumer reading the SQLite file directly (same host, read-only): the changes after a
 * saved seq, each key's current row and access rows, applied to a tiny index.
 *
 *   npx tsx examples/read-sqlite.ts data/mirror.db
 */

import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import type { State } from "./follow-changes.js";

export function catchUpFromFile(path: string, state: State): State {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const changes = db.prepare("SELECT seq, key FROM changes WHERE seq > ? ORDER BY seq LIMIT 500");
    const row = db.prepare("SELECT title, content_hash FROM resources WHERE key = ? AND deleted_at IS NULL");
    const users = db.prepare(
      "SELECT DISTINCT user_email FROM resource_access WHERE key = ? ORDER BY user_email",
    );
    for (;;) {
      // One read transaction per page: the rows and access lists are a consistent snapshot.
      const page = db.transaction(() =>
        (changes.all(state.after) as { seq: number; key: string }[]).map((c) => ({
          ...c,
          resource: row.get(c.key) as { title: string | null; content_hash: string } | undefined,
          users: (users.all(c.key) as { user_email: string }[]).map((u) => u.user_email),
        })),
      )();
      for (const c of page) {
        if (c.resource === undefined) delete state.index[c.key];
        else
          state.index[c.key] = {
            title: c.resource.title,
            contentHash: c.resource.content_hash,
            users: c.users,
          };
        state.after = c.seq;
      }
      if (page.length < 500) return state;
    }
  } finally {
    db.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const state = catchUpFromFile(process.argv[2] ?? "data/mirror.db", { after: 0, index: {} });
  console.log(`seq ${state.after}: ${Object.keys(state.index).length} documents`);
}
