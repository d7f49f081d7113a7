/**
 * Opening the PostgreSQL store: replicas starting together migrate once, a schema newer than the
 * binary is refused, and connection failures are typed and never show the URL.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DatabaseRefusedError, DatabaseUnavailableError, SchemaTooNewError } from "../../../src/errors.js";
import { silentLogger } from "../../../src/log.js";
import { readJournal } from "../../../src/store/migrations-dir.js";
import { MIGRATION_LOCK } from "../../../src/store/postgres/open.js";
import { openPostgresStore } from "../../../src/store/postgres/postgres-store.js";
import { createTestDatabase, postgresForTests } from "../../helpers/postgres.js";
import { resource } from "../../helpers/store-fixtures.js";

const URL_ENV = "SYNCMIRROR_DATABASE_URL";
const open = (url: string) => openPostgresStore({ url, urlEnv: URL_ENV, poolSize: 2, log: silentLogger() });

async function rows<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

describe.runIf(await postgresForTests())("opening the PostgreSQL store", () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    // Empty, not cloned from the migrated template: the first test migrates it.
    database = await createTestDatabase({ empty: true });
  });
  afterAll(async () => {
    await database?.drop();
  });

  it("migrates a fresh database once when three replicas open it at the same time", async () => {
    const stores = await Promise.all([open(database.url), open(database.url), open(database.url)]);
    try {
      const applied = await rows<{ hash: string }>(
        database.url,
        "SELECT hash FROM drizzle.__drizzle_migrations",
      );
      expect(applied).toHaveLength(readJournal("postgres").entries.length);
      for (const store of stores) await store.ping();
      await stores[0]?.mirrors.ensure("main", "cfg");
      expect(await stores[2]?.mirrors.get("main")).toMatchObject({ syncConfigId: "cfg" });
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it("opens a database already migrated without waiting for a replica that holds the migration lock", async () => {
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    try {
      await holder.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
      const store = await open(database.url);
      try {
        await store.ping();
      } finally {
        await store.close();
      }
    } finally {
      await holder.end();
    }
  });

  it("refuses a database migrated by a newer syncmirror, naming both schema versions", async () => {
    const journal = readJournal("postgres").entries;
    const newest = journal.at(-1);
    await rows(
      database.url,
      `INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES ('from-the-future', ${(newest?.when ?? 0) + 1000})`,
    );
    try {
      const refused = await open(database.url).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(SchemaTooNewError);
      const message = (refused as Error).message;
      expect(message).toContain(`${journal.length + 1} schema migration(s)`);
      expect(message).toContain(`this syncmirror's ${journal.length} (up to ${newest?.tag})`);
      expect(message).toContain("upgrade syncmirror");
      expect(message).not.toContain(database.url);
    } finally {
      await rows(database.url, "DELETE FROM drizzle.__drizzle_migrations WHERE hash = 'from-the-future'");
    }
  });

  it("compresses documents' text with lz4, the server having it", async () => {
    const store = await open(database.url);
    try {
      const text = "a document that repeats itself. ".repeat(400);
      await store.transaction((tx) =>
        tx.resources.writeAll([{ ...resource("doc"), contentText: text }], null, "2026-11-26T00:00:00.000Z"),
      );
      const stored = await rows<{ method: string | null; text: string }>(
        database.url,
        "SELECT pg_column_compression(content_text) AS method, content_text AS text FROM resources WHERE key = 'doc'",
      );
      expect(stored).toEqual([{ method: "lz4", text }]);
    } finally {
      await store.close();
    }
  });

  it("makes the temporary table of pending changes only on a connection that runs a transaction", async () => {
    const pendingTables = async () =>
      (
        await rows<{ n: number }>(
          database.url,
          "SELECT count(*)::int AS n FROM pg_class WHERE relname = 'syncmirror_pending_changes'",
        )
      )[0]?.n;
    const store = await open(database.url);
    try {
      // Issued together: the pool opens its second connection for them.
      await Promise.all([store.mirrors.get("main"), store.runs.newestCreatedAt("main"), store.ping()]);
      expect(await pendingTables()).toBe(0);
      await store.transaction((tx) =>
        tx.resources.writeAll([resource("pending")], null, "2026-11-26T00:00:00.000Z"),
      );
      expect(await pendingTables()).toBe(1);
    } finally {
      await store.close();
    }
  });

  it("names the env var, never the URL or its password, when the database does not exist", async () => {
    const url = new URL(database.url);
    url.pathname = "/syncmirror_no_such_database";
    url.password = "s3cret-pw";
    const refused = await open(url.toString()).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(DatabaseRefusedError);
    const message = (refused as Error).message;
    expect(message).toContain(`$${URL_ENV}`);
    expect(message).toContain("does not exist");
    expect(message).not.toContain(url.toString());
    expect(message).not.toContain("s3cret-pw");
  });

  it("tells a server that is not there (retryable) from a URL that is wrong", async () => {
    const refused = await open("postgres://postgres:s3cret-pw@127.0.0.1:1/postgres").catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(DatabaseUnavailableError);
    expect(refused).toMatchObject({ code: "DB_UNAVAILABLE", retryable: true });
    expect((refused as Error).message).toContain(`$${URL_ENV}`);
    expect((refused as Error).message).not.toContain("s3cret-pw");

    const notPostgres = await open("mysql://root:s3cret-pw@127.0.0.1/db").catch((error: unknown) => error);
    expect(notPostgres).toBeInstanceOf(DatabaseRefusedError);
    expect((notPostgres as Error).message).toContain(`$${URL_ENV} does not hold a postgres:// URL`);
    expect((notPostgres as Error).message).not.toContain("s3cret-pw");
  });
});
