/**
 * The PostgreSQL server the Postgres workloads use: BENCH_POSTGRES_URL, else the tests' server
 * (SYNCMIRROR_TEST_DATABASE_URL, else the local one: trust auth, user postgres). Every workload gets a database of its own, created under a
 * random name and dropped after, so runs never see each other's rows.
 */
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import pg from "pg";
import type { DbFacts } from "./mirror.js";

const DEFAULT_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres";

export function adminUrl(env: NodeJS.ProcessEnv = process.env): string {
  return env.BENCH_POSTGRES_URL || env.SYNCMIRROR_TEST_DATABASE_URL || DEFAULT_ADMIN_URL;
}

/** Whether a server answers at the admin URL (a failed connect within 3 s means no). */
export async function postgresAvailable(url: string): Promise<boolean> {
  try {
    await admin(url, (c) => c.query("SELECT 1"), 3000);
    return true;
  } catch {
    return false;
  }
}

async function admin<T>(url: string, fn: (client: pg.Client) => Promise<T>, timeoutMs?: number): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Creates a fresh database, runs `fn` with its URL, and drops it (and its connections) after. */
export async function withDatabase<T>(
  url: string,
  label: string,
  fn: (databaseUrl: string) => Promise<T>,
): Promise<T> {
  const name = `bench_${label.replace(/[^a-z0-9]/g, "_")}_${randomBytes(4).toString("hex")}`;
  await admin(url, (c) => c.query(`CREATE DATABASE ${name}`));
  const databaseUrl = new URL(url);
  databaseUrl.pathname = `/${name}`;
  try {
    return await fn(databaseUrl.toString());
  } finally {
    await admin(url, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }
}

/** Database size and row counts of the public tables, as dbFacts gives them for SQLite. */
export async function pgFacts(
  databaseUrl: string,
  tables = { resources: "resources", access: "resource_access" },
): Promise<DbFacts> {
  return admin(databaseUrl, async (c) => {
    const count = async (table: string) =>
      Number((await c.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]?.n ?? 0);
    const hasChanges = (await c.query("SELECT to_regclass('changes') IS NOT NULL AS ok")).rows[0]?.ok;
    const size = await c.query<{ n: string }>("SELECT pg_database_size(current_database()) AS n");
    return {
      bytes: Number(size.rows[0]?.n ?? 0),
      resources: await count(tables.resources),
      access: await count(tables.access),
      changes: hasChanges ? await count("changes") : 0,
    };
  });
}

/** Runs `sql` on the database and returns its rows (the replica workload polls `triggers` with it). */
export function pgQuery<R extends pg.QueryResultRow>(databaseUrl: string, sql: string): Promise<R[]> {
  return admin(databaseUrl, async (c) => (await c.query<R>(sql)).rows);
}

/**
 * CPU seconds the PostgreSQL server on this machine has used so far (its processes' own and that
 * of the backends it has reaped), read from /proc: NaN where there is no /proc or no local server.
 * The difference over a pass is what the pass cost the database, a figure the client's CPU leaves
 * out and which competes with it for the same cores when both run here.
 */
export function localServerCpuSeconds(): number {
  let ticks = 0;
  let found = false;
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return Number.NaN;
  }
  for (const pid of entries) {
    if (!/^\d+$/.test(pid)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue;
    }
    const close = stat.lastIndexOf(")");
    if (stat.slice(stat.indexOf("(") + 1, close) !== "postgres") continue;
    // Fields after the command: state is field 3, utime..cstime are fields 14-17.
    const fields = stat.slice(close + 2).split(" ");
    found = true;
    for (const i of [11, 12, 13, 14]) ticks += Number(fields[i]);
  }
  return found ? ticks / CLOCK_TICKS_PER_SECOND : Number.NaN;
}

/** USER_HZ, 100 on every Linux this runs on (`getconf CLK_TCK`). */
const CLOCK_TICKS_PER_SECOND = 100;
