/**
 * A PostgreSQL server for tests: `SYNCMIRROR_TEST_DATABASE_URL`, else the local server (trust
 * auth). Each test file works in a database of its own, created here with a random name.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";

const LOCAL_SERVER = "postgres://postgres@127.0.0.1:5432/postgres";
export const TEST_URL_ENV = "SYNCMIRROR_TEST_DATABASE_URL";

const serverUrl = (): string => process.env[TEST_URL_ENV] || LOCAL_SERVER;

async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: serverUrl(), connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export async function postgresAvailable(): Promise<boolean> {
  try {
    await withAdmin((client) => client.query("SELECT 1"));
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether this file's Postgres tests run. Where no server answers they are skipped after one line
 * saying so, unless `SYNCMIRROR_REQUIRE_POSTGRES=1` (CI), which makes that a failure.
 */
export async function postgresForTests(): Promise<boolean> {
  if (await postgresAvailable()) return true;
  const where = new URL(serverUrl()).host;
  if (process.env.SYNCMIRROR_REQUIRE_POSTGRES === "1") {
    throw new Error(`SYNCMIRROR_REQUIRE_POSTGRES=1 but no PostgreSQL server answers at ${where}`);
  }
  console.warn(
    `PostgreSQL tests skipped: no server answers at ${where} (set ${TEST_URL_ENV}; SYNCMIRROR_REQUIRE_POSTGRES=1 fails instead)`,
  );
  return false;
}

export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `syncmirror_test_${randomBytes(6).toString("hex")}`;
  await withAdmin((client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(serverUrl());
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () =>
      withAdmin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => {}),
  };
}
