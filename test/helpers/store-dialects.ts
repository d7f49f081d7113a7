/**
 * The two store dialects for suites that run once per dialect (`describe.each(storeDialects)`):
 * each opens a fresh store with the real migrations and offers a reader for assertions that goes
 * around the store (a second connection).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import { silentLogger } from "../../src/log.js";
import { openPostgresStore } from "../../src/store/postgres/postgres-store.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { createTestDatabase, postgresForTests, TEST_URL_ENV } from "./postgres.js";

export interface OpenedStore {
  store: Store;
  /** Rows of a query written with `?` placeholders, read outside the store. */
  query<T = Record<string, unknown>>(sql: string, ...params: unknown[]): Promise<T[]>;
  /** Postgres only: the URL of the test database. */
  url?: string;
  close(): Promise<void>;
}

export interface StoreDialect {
  name: "sqlite" | "postgres";
  open(options?: StoreSeams): Promise<OpenedStore>;
}

/** Test seams of the store runtime (`StoreRuntimeOptions`). */
export interface StoreSeams {
  retryEachTransaction?: boolean;
}

const sqlite: StoreDialect = {
  name: "sqlite",
  async open(seams = {}) {
    const dir = mkdtempSync(join(tmpdir(), "syncmirror-store-"));
    const store = openSqliteStore(join(dir, "mirror.db"), seams);
    const reader = new Database(join(dir, "mirror.db"), { readonly: true });
    return {
      store,
      query: async <T>(sql: string, ...params: unknown[]) => reader.prepare(sql).all(...params) as T[],
      async close() {
        reader.close();
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

const postgres: StoreDialect = {
  name: "postgres",
  async open(seams = {}) {
    const database = await createTestDatabase();
    const store = await openPostgresStore({
      url: database.url,
      urlEnv: TEST_URL_ENV,
      poolSize: 4,
      log: silentLogger(),
      ...seams,
    });
    const reader = new pg.Client({ connectionString: database.url });
    await reader.connect();
    return {
      store,
      url: database.url,
      async query<T>(sql: string, ...params: unknown[]) {
        let n = 0;
        const result = await reader.query(
          sql.replace(/\?/g, () => `$${++n}`),
          params,
        );
        return result.rows as T[];
      },
      async close() {
        await reader.end();
        await store.close();
        await database.release();
      },
    };
  },
};

/** SQLite always; Postgres when a server answers (see `postgresForTests`). */
export async function storeDialects(): Promise<StoreDialect[]> {
  return (await postgresForTests()) ? [sqlite, postgres] : [sqlite];
}

/** The dialect's store, filled in before the suite's tests run and closed after them. */
export function useStore(dialect: StoreDialect, seams?: StoreSeams): OpenedStore {
  const opened = {} as OpenedStore;
  beforeAll(async () => {
    Object.assign(opened, await dialect.open(seams));
  });
  afterAll(async () => {
    await opened.close?.();
  });
  return opened;
}
