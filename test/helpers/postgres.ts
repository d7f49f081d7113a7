/**
 * A PostgreSQL server for tests: `SYNCMIRROR_TEST_DATABASE_URL`, else the local server (trust
 * auth). Each harness or store suite works in a database of its own, cloned from a migrated
 * template (`CREATE DATABASE ... TEMPLATE`: about a quarter of creating one and migrating it).
 *
 * The template is named by a hash of `migrations/postgres`, so a change of migrations builds a new
 * one and runs with other migrations (other worktrees on the same server) keep theirs. It is built
 * once, under an advisory lock, by whichever process first finds it missing (vitest's global setup
 * builds it before the workers start; a worker run alone builds it itself). Nobody may connect to
 * it (`ALLOW_CONNECTIONS false`): a clone fails while anyone is connected to its template.
 *
 * Test databases are named `syncmirror_test_<run>_<random>`. When its suite ends, each is emptied
 * for the next test of the run or dropped (postgres-recycle.ts); the global teardown drops whatever
 * a run left (free databases, a worker killed mid-test).
 */
import { createHash, randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import pg from "pg";
import { inject } from "vitest";
import { silentLogger } from "../../src/log.js";
import { migrationsDir } from "../../src/store/migrations-dir.js";
import { openPostgresStore } from "../../src/store/postgres/postgres-store.js";
import { claimFree, learnTemplateSchema, recycle, runPrefixes } from "./postgres-recycle.js";

const LOCAL_SERVER = "postgres://postgres@127.0.0.1:5432/postgres";
export const TEST_URL_ENV = "SYNCMIRROR_TEST_DATABASE_URL";
/** Any fixed number: held on the admin connection while the template is built. */
const TEMPLATE_LOCK = 0x5_9c_4d_7e;
/** Templates of other migrations are dropped once this old: not in use by a run still going. */
const STALE_TEMPLATE_MS = 24 * 3600 * 1000;

const serverUrl = (): string => process.env[TEST_URL_ENV] || LOCAL_SERVER;

/** The URL of database `name` on the test server. */
export function databaseUrl(name: string): string {
  const url = new URL(serverUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

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

/** `syncmirror_template_<12 hex of the migrations' paths and bytes>`. */
export function templateName(): string {
  const root = migrationsDir("postgres");
  const hash = createHash("sha256");
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
      a.name < b.name ? -1 : 1,
    )) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else hash.update(relative(root, path)).update("\0").update(readFileSync(path)).update("\0");
    }
  };
  walk(root);
  return `syncmirror_template_${hash.digest("hex").slice(0, 12)}`;
}

/**
 * Builds the template unless it exists. Safe when several processes call it at once: the first
 * builds under the lock, the others wait for the lock and find it there.
 */
export async function ensureTemplate(): Promise<string> {
  const template = templateName();
  await withAdmin(async (admin) => {
    await admin.query("SELECT pg_advisory_lock($1)", [TEMPLATE_LOCK]);
    try {
      if (await databaseExists(admin, template)) return;
      await dropStaleTemplates(admin, template);
      // Built under another name and renamed when complete: a builder killed half-way leaves no
      // template that looks finished (the leftover is dropped here by the next builder).
      const building = `${template}_building`;
      await admin.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
      await admin.query(`CREATE DATABASE ${building}`);
      const store = await openPostgresStore({
        url: databaseUrl(building),
        urlEnv: TEST_URL_ENV,
        poolSize: 1,
        log: silentLogger(),
      });
      await store.close();
      await admin.query(`ALTER DATABASE ${building} WITH ALLOW_CONNECTIONS false`);
      await admin.query(`COMMENT ON DATABASE ${building} IS '${new Date().toISOString()}'`);
      await admin.query(`ALTER DATABASE ${building} RENAME TO ${template}`);
    } finally {
      await admin.query("SELECT pg_advisory_unlock($1)", [TEMPLATE_LOCK]);
    }
  });
  return template;
}

async function databaseExists(admin: pg.Client, name: string): Promise<boolean> {
  return (await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [name])).rowCount === 1;
}

/** Templates of other migrations built more than a day ago (their comment holds when). */
async function dropStaleTemplates(admin: pg.Client, keep: string): Promise<void> {
  const { rows } = await admin.query<{ datname: string; built: string | null }>(
    `SELECT datname, shobj_description(oid, 'pg_database') AS built FROM pg_database
     WHERE datname LIKE 'syncmirror\\_template\\_%' AND datname NOT LIKE '%\\_building' AND datname <> $1`,
    [keep],
  );
  for (const { datname, built } of rows) {
    const builtMs = built ? Date.parse(built) : Number.NaN;
    if (Number.isNaN(builtMs) || Date.now() - builtMs > STALE_TEMPLATE_MS)
      await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
  }
}

export interface TestDatabase {
  name: string;
  url: string;
  /** Done with it: emptied for the next test of the run, or dropped. */
  release(): Promise<void>;
  drop(): Promise<void>;
}

/**
 * A database of its own: an emptied one the run released, else a clone of the migrated template;
 * with `empty`, one without any schema (for tests of migrating itself).
 */
export async function createTestDatabase(options: { empty?: boolean } = {}): Promise<TestDatabase> {
  // Without the global setup's run id nothing would drop a free database at the end: no recycling.
  const runId = inject("postgresRunId");
  const name = `syncmirror_test_${runId ?? `p${process.pid}`}_${randomBytes(5).toString("hex")}`;
  const url = databaseUrl(name);
  await withAdmin(async (admin) => {
    if (options.empty) {
      await admin.query(`CREATE DATABASE ${name}`);
      return;
    }
    if (runId !== undefined && (await claimFree(admin, runId, name))) return;
    const template = templateName();
    if (!(await databaseExists(admin, template))) await ensureTemplate();
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
  });
  // A fresh clone, or a free one (emptied only when its schema was the template's): either shows it.
  if (!options.empty) await learnTemplateSchema(url);
  const drop = () =>
    withAdmin((admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => {});
  return {
    name,
    url,
    release: () =>
      runId === undefined || options.empty ? drop() : withAdmin((admin) => recycle(admin, runId, name, url)),
    drop,
  };
}

/** Drops every database of run `runId` still there, in use or free; returns how many. */
export async function dropRunDatabases(runId: string): Promise<number> {
  return withAdmin(async (admin) => {
    let dropped = 0;
    for (const prefix of runPrefixes(runId)) {
      const { rows } = await admin.query<{ datname: string }>(
        "SELECT datname FROM pg_database WHERE starts_with(datname, $1)",
        [prefix],
      );
      for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
      dropped += rows.length;
    }
    return dropped;
  });
}

declare module "vitest" {
  export interface ProvidedContext {
    /** Names this run's test databases, so the global teardown drops what the run left. */
    postgresRunId: string | undefined;
  }
}
