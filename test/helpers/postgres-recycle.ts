/**
 * Test databases are recycled within a run instead of dropped: on PostgreSQL 15 every
 * `DROP DATABASE` forces a checkpoint (0.5 to 1 s on this shared machine, and it flushes every
 * other test's writes too), where emptying the tables costs about 0.1 s. A released database
 * whose schema is still the template's is emptied (`TRUNCATE ... RESTART IDENTITY`) and renamed
 * `syncmirror_free_<run>_<random>`; the next test of the run, in any worker, claims it by renaming
 * it back (a rename wins or fails whole: two workers never claim the same one). One whose schema
 * changed (search turned on adds a column) is dropped. The global teardown drops the free ones.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";

const FREE_PREFIX = "syncmirror_free_";

/** Columns, types and indexes of the public schema, dropped columns included: equal to the template's, or not reusable. */
const SCHEMA_FINGERPRINT = `SELECT md5(coalesce(string_agg(
    format('%s.%s %s', c.relname, a.attname, format_type(a.atttypid, a.atttypmod)), ',' ORDER BY c.relname, a.attnum),
  '')) AS f
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid
  WHERE n.nspname = 'public' AND a.attnum > 0`;

/** The template's fingerprint, read from this process's first database. */
let templateFingerprint: string | undefined;

async function fingerprint(client: pg.Client): Promise<string> {
  return (await client.query<{ f: string }>(SCHEMA_FINGERPRINT)).rows[0]?.f ?? "";
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Remembers the template's schema from a database no test has touched yet (once per process). */
export async function learnTemplateSchema(url: string): Promise<void> {
  templateFingerprint ??= await withClient(url, fingerprint);
}

/** Renames a free database of run `runId` to `name`; false when there is none to claim. */
export async function claimFree(admin: pg.Client, runId: string, name: string): Promise<boolean> {
  const { rows } = await admin.query<{ datname: string }>(
    "SELECT datname FROM pg_database WHERE starts_with(datname, $1)",
    [`${FREE_PREFIX}${runId}_`],
  );
  for (const { datname } of rows) {
    try {
      await admin.query(`ALTER DATABASE ${datname} RENAME TO ${name}`);
      return true;
    } catch {
      // Another worker claimed it first.
    }
  }
  return false;
}

/**
 * Empties database `name` and puts it on the run's free list, or drops it when its schema is no
 * longer the template's or something still holds it.
 */
export async function recycle(admin: pg.Client, runId: string, name: string, url: string): Promise<void> {
  // A daemon killed a moment ago may leave its backend behind for a while: end it, and wait.
  await admin.query(
    "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
    [name],
  );
  const emptied = await withClient(url, async (client) => {
    if (templateFingerprint === undefined || (await fingerprint(client)) !== templateFingerprint)
      return false;
    const { rows } = await client.query<{ t: string }>(
      "SELECT format('%I', tablename) AS t FROM pg_tables WHERE schemaname = 'public'",
    );
    await client.query(`TRUNCATE ${rows.map((r) => r.t).join(", ")} RESTART IDENTITY`);
    return true;
  }).catch(() => false);
  if (emptied) {
    try {
      await admin.query(
        `ALTER DATABASE ${name} RENAME TO ${FREE_PREFIX}${runId}_${randomBytes(5).toString("hex")}`,
      );
      return;
    } catch {
      // Someone connected again: not reusable.
    }
  }
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

/** The prefixes of every database a run may leave: in use, and free. */
export function runPrefixes(runId: string): string[] {
  return [`syncmirror_test_${runId}_`, `${FREE_PREFIX}${runId}_`];
}
