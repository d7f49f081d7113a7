/**
 * A database that fails in the middle of a `sync` (the real CLI), each store the way it really
 * fails: on SQLite the disk fills (the CLI runs under `ulimit -f`, RLIMIT_FSIZE, set to 70% of what
 * the pass needs as measured on the clean twin: a write past it fails like a full disk); on
 * PostgreSQL the connection of a page transaction is terminated (`pg_terminate_backend`) while
 * that transaction waits on a lock this helper holds. No seam in the product is involved.
 */
import { statSync } from "node:fs";
import pg from "pg";
import { vi } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { spawnCli } from "./daemon.js";
import type { Harness } from "./mirror-harness.js";
import { triggerPosts } from "./requests.js";

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

const WAIT = { timeout: 30_000, interval: 20 };

/** `sync` on `hurt` with its database failing mid-pass; `clean` has already run the same pass. */
export function syncWithDatabaseFault(hurt: Harness, clean: Harness): Promise<CliResult> {
  return hurt.databaseUrl === undefined
    ? syncFillingTheDisk(hurt, clean)
    : syncLosingTheConnection(hurt, hurt.databaseUrl);
}

async function syncFillingTheDisk(hurt: Harness, clean: Harness): Promise<CliResult> {
  // Create the database (migrations) first, then let its files grow by 70% of what the pass
  // needs: the first export pages fit, the rest do not.
  await openSqliteStore(hurt.dbPath).close();
  const emptyBytes = statSync(hurt.dbPath).size;
  const limitBytes = emptyBytes + (statSync(clean.dbPath).size - emptyBytes) * 0.7;
  // 512-byte blocks in sh; Node ignores SIGXFSZ, so SQLite gets EFBIG.
  const prelude = `ulimit -f ${Math.ceil(limitBytes / 512)}`;
  const p = spawnCli(["sync", "--config", hurt.configPath], hurt.env, { prelude });
  const { code } = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

async function syncLosingTheConnection(hurt: Harness, url: string): Promise<CliResult> {
  const locker = new pg.Client({ connectionString: url });
  await locker.connect();
  try {
    hurt.sim.runs.hold();
    const p = spawnCli(["sync", "--config", hurt.configPath], hurt.env);
    await vi.waitFor(() => {
      if (triggerPosts(hurt) !== 1) throw new Error("no trigger yet");
    }, WAIT);
    // Pages write access rows: the first page transaction waits here, mid-transaction.
    await locker.query("BEGIN");
    await locker.query("LOCK TABLE resource_access IN EXCLUSIVE MODE");
    hurt.sim.runs.release();
    const pid = await vi.waitFor(async () => {
      const { rows } = await locker.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity
          WHERE datname = current_database() AND application_name = 'syncmirror' AND wait_event_type = 'Lock'`,
      );
      if (rows[0] === undefined) throw new Error("no page transaction waiting yet");
      return rows[0].pid;
    }, WAIT);
    await locker.query("SELECT pg_terminate_backend($1)", [pid]);
    await locker.query("ROLLBACK");
    const { code } = await p.exited;
    return { code, stdout: p.stdout(), stderr: p.stderr() };
  } finally {
    await locker.end();
  }
}
