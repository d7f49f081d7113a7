/**
 * A write to a harness's database from outside syncmirror (as another replica or an operator's
 * tool would): `?` placeholders, on whichever store the suite runs against.
 */
import Database from "better-sqlite3";
import pg from "pg";
import type { Harness } from "./mirror-harness.js";

export async function execute(h: Harness, sql: string, ...params: unknown[]): Promise<void> {
  if (h.databaseUrl !== undefined) {
    const client = new pg.Client({ connectionString: h.databaseUrl });
    await client.connect();
    try {
      let n = 0;
      await client.query(
        sql.replace(/\?/g, () => `$${++n}`),
        params,
      );
    } finally {
      await client.end();
    }
    return;
  }
  const db = new Database(h.dbPath);
  try {
    db.prepare(sql).run(...params);
  } finally {
    db.close();
  }
}
