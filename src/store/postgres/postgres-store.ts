/**
 * The PostgreSQL store (docs/scaling-out.md): a pool shared by any number of replicas' processes, and
 * its driver for the store runtime (`../store-runtime.ts`).
 *
 * Each transaction takes a pool client of its own; work outside one runs on the pool at once.
 * Replicas writing the same rows may deadlock or fail to serialize: the runtime runs such a
 * transaction again. A transaction's changes wait in a table of its session and are published
 * (given their seqs, NOTIFYed) just before its COMMIT (`changes.ts`); other processes' commits
 * arrive through LISTEN (`listen.ts`).
 */
import { drizzle } from "drizzle-orm/node-postgres";
import pg from "pg";
import type { Logger } from "../../log.js";
import { type DriverTransaction, errorCodes, type StoreDriver } from "../driver.js";
import type { Store } from "../store.js";
import { createStore } from "../store-runtime.js";
import type { ChangeOp } from "../types.js";
import { createAccessRepo } from "./access.js";
import { createSweepApprovalRepo } from "./approvals.js";
import { CREATE_PENDING_SQL, createChangeRepo, publishAndCommit } from "./changes.js";
import { createControlRepo } from "./controls.js";
import { createDryRunRepo } from "./dry-run.js";
import { readChanges } from "./feed.js";
import { createHistoryRepo } from "./history.js";
import { createLeaseRepo } from "./leases.js";
import { createChangeListener } from "./listen.js";
import { createMirrorRepo } from "./mirrors.js";
import {
  clientConfig,
  connectError,
  createNaming,
  createPool,
  migrateUnderLock,
  type Naming,
  storeError,
} from "./open.js";
import { createPairRepo } from "./pairs.js";
import { createProblemRepo } from "./problems.js";
import { createReplicaRepo } from "./replicas.js";
import { createResourceRepo } from "./resources.js";
import { createRunRepo } from "./runs.js";
import { createScheduleRepo } from "./schedules.js";
import * as schema from "./schema.js";
import { applySearchSetting, rebuildSearchIndex, searchResources } from "./search.js";
import { createSyncConfigRepo } from "./sync-configs.js";
import { createTriggerRepo } from "./triggers.js";

export { CHANGES_CHANNEL } from "./changes.js";

export interface PostgresStoreOptions {
  url: string;
  /** Named in messages instead of the URL, which carries a password. */
  urlEnv: string;
  poolSize: number;
  log: Logger;
  /** The SYNCMIRROR_RETRY_EACH_TRANSACTION test seam (see `StoreRuntimeOptions`). */
  retryEachTransaction?: boolean;
}

/** deadlock_detected, serialization_failure: another replica wrote the same rows. */
const RETRIED_CODES = new Set(["40P01", "40001"]);

type PgConn = pg.Pool | pg.PoolClient;

/**
 * Documents' text is compressed with lz4 rather than pglz, PostgreSQL's default, where the server
 * has it (14 and later, built with lz4): pglz took about 65 µs of the server's CPU for each 4.6 kB
 * document written, lz4 about a third of it, and the server's CPU is most of the cost of a cold
 * pass on the database's side. Elsewhere the setting is refused, quietly, and pglz stays.
 */
const PREFER_LZ4_SQL = `DO $$ BEGIN
  PERFORM set_config('default_toast_compression', 'lz4', false);
EXCEPTION WHEN OTHERS THEN NULL;
END $$`;

export async function openPostgresStore(options: PostgresStoreOptions): Promise<Store> {
  return openPostgres(options, true);
}

/** The store when syncmirror has migrated the database before, else null (the database left untouched). */
export async function openExistingPostgresStore(options: PostgresStoreOptions): Promise<Store | null> {
  return openPostgres(options, false);
}

async function openPostgres(options: PostgresStoreOptions, create: true): Promise<Store>;
async function openPostgres(options: PostgresStoreOptions, create: false): Promise<Store | null>;
async function openPostgres(options: PostgresStoreOptions, create: boolean): Promise<Store | null> {
  const naming = createNaming(options.url, options.urlEnv);
  const pool = createPool(options.url, options.poolSize, naming);
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on("error", (error) => {
    options.log.warn(
      { err: naming.redact(error.message) },
      `${naming.database}: an idle connection was lost`,
    );
  });
  let initialised: boolean;
  try {
    initialised = await migrateUnderLock(pool, naming, { create });
  } catch (error) {
    await pool.end().catch(() => {});
    throw error;
  }
  if (!initialised) {
    await pool.end();
    return null;
  }
  return createStore(createPostgresDriver(pool, naming, options), options);
}

function createPostgresDriver(
  pool: pg.Pool,
  naming: Naming,
  options: PostgresStoreOptions,
): StoreDriver<PgConn> {
  // Only connections that run a transaction write documents or record changes: one that only
  // reads (3 of the 4 a pass opens, for its parallel reads) is spared the temporary table (catalog
  // writes when made, and again when its session ends) and PL/pgSQL's loading: on loopback, 3 ms
  // more to its first answer and 2 ms more to end it; opening the store took 12 ms, not 20.
  const prepared = new WeakSet<pg.PoolClient>();
  const prepareForWrites = (client: pg.PoolClient) => {
    if (prepared.has(client)) return;
    prepared.add(client);
    client.query(PREFER_LZ4_SQL).catch(() => {});
    client.query(CREATE_PENDING_SQL).catch((error: Error) => {
      options.log.warn(
        { err: naming.redact(error.message) },
        `${naming.database}: could not create this connection's temporary table of pending changes; grant the role TEMPORARY on the database`,
      );
    });
  };
  const notifications = createChangeListener({
    connect: () => new pg.Client(clientConfig(options.url)),
    log: options.log,
    naming,
  });
  return {
    shared: pool,
    oneConnection: false,
    repositories(client, onRecorded) {
      const conn = { db: drizzle(client, { schema }), client };
      const access = createAccessRepo(conn);
      return {
        resources: createResourceRepo(conn),
        access,
        changes: createChangeRepo(conn, onRecorded, access),
        pairs: createPairRepo(conn),
        triggers: createTriggerRepo(conn),
        runs: createRunRepo(conn),
        mirrors: createMirrorRepo(conn),
        dryRun: createDryRunRepo(conn),
        leases: createLeaseRepo(conn),
        syncConfigs: createSyncConfigRepo(conn),
        schedules: createScheduleRepo(conn),
        replicas: createReplicaRepo(conn),
        controls: createControlRepo(conn),
        history: createHistoryRepo(conn),
        problems: createProblemRepo(conn),
        approvals: createSweepApprovalRepo(conn),
      };
    },
    begin: () => beginOn(pool, prepareForWrites),
    isRetryable: (error) => errorCodes(error).some((code) => RETRIED_CODES.has(code)),
    toStoreError: (error) => storeError(error, naming),
    // Reads and DDL on pool clients of their own: they never join nor wait for this process's queue.
    readChanges: (q) => readChanges(pool, q),
    search: {
      apply: (enabled) => applySearchSetting(pool, enabled),
      rebuild: () => rebuildSearchIndex(pool),
      query: (q) => searchResources(pool, q),
    },
    async countContents() {
      const [contents, changes] = await Promise.all([
        pool.query<{ live: number; tombstones: number }>(
          "SELECT (count(*) - count(deleted_at))::int AS live, count(deleted_at)::int AS tombstones FROM resources",
        ),
        pool.query<{ op: ChangeOp; n: number }>("SELECT op, count(*)::int AS n FROM changes GROUP BY op"),
      ]);
      return {
        ...(contents.rows[0] ?? { live: 0, tombstones: 0 }),
        changes: Object.fromEntries(changes.rows.map((c) => [c.op, c.n])),
      };
    },
    // This process's commits wake at once; other processes' through LISTEN (a second wake-up is harmless).
    watchCommits: (wake, listening) => notifications.ensure(wake, listening),
    async ping() {
      try {
        await pool.query("SELECT 1");
      } catch (error) {
        throw connectError(error, naming);
      }
    },
    async close() {
      await notifications.close();
      await pool.end();
    },
  };
}

/**
 * A pool client of its own, in a transaction until it commits or rolls back. The pool's clients
 * pipeline (`createPool`): BEGIN is not waited for but sent ahead of the transaction's first
 * statements, which the server runs after it, so it costs no round trip of its own; were it to
 * fail, so would they, and COMMIT reports it. A connection's first transaction is preceded, in
 * the same flight and outside it (a rollback must not undo it), by its session's set-up
 * (`prepare`).
 */
async function beginOn(
  pool: pg.Pool,
  prepare: (client: pg.PoolClient) => void,
): Promise<DriverTransaction<PgConn>> {
  const client = await pool.connect();
  prepare(client);
  return transactionOn(client);
}

/**
 * A transaction on `client`, which it gives back to the pool when it ends, unless the next
 * transaction began behind its COMMIT (`sendCommit`): the connection is then that one's.
 */
function transactionOn(client: pg.PoolClient): DriverTransaction<PgConn> {
  let broken: Error | undefined;
  // A connection lost between statements is reported by the next statement; meanwhile the
  // client's own error event must not take the process down.
  const onLost = (error: Error) => {
    broken = error;
  };
  client.on("error", onLost);
  const release = () => {
    client.off("error", onLost);
    client.release(broken);
  };
  const begun = client.query("BEGIN").then(
    () => undefined,
    (error: Error) => {
      broken = error;
      return error;
    },
  );
  /** The COMMIT (publishing the changes when any were recorded), issued at once; the client pipelines. */
  const sendCommitStatements = (recorded: boolean): Promise<unknown> =>
    recorded ? publishAndCommit(client) : client.query("COMMIT");
  return {
    conn: client,
    async commit(recorded) {
      const failed = await begun;
      if (failed) throw failed;
      await sendCommitStatements(recorded);
      release();
    },
    sendCommit(recorded) {
      let answered = false;
      let handedOn = false;
      const end = () => {
        answered = true;
        if (handedOn) client.off("error", onLost);
        else release();
      };
      const done = Promise.all([begun, sendCommitStatements(recorded)]).then(
        ([failed]) => {
          end();
          if (failed) throw failed;
        },
        (error: unknown) => {
          end();
          throw error;
        },
      );
      return {
        done,
        next() {
          if (answered || handedOn || broken) return undefined;
          handedOn = true;
          return transactionOn(client);
        },
      };
    },
    async rollback() {
      await client.query("ROLLBACK").catch((error: Error) => {
        broken = error;
      });
      release();
    },
    async conflict() {
      await client.query(
        "DO $$ BEGIN RAISE EXCEPTION 'forced by SYNCMIRROR_RETRY_EACH_TRANSACTION' USING ERRCODE = 'serialization_failure'; END $$",
      );
    },
  };
}
