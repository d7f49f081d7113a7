/**
 * The SQLite store: one file, one connection, one writer process (the lock in `open.ts`), and its
 * driver for the store runtime (`../store-runtime.ts`).
 *
 * better-sqlite3 runs each statement synchronously, so a transaction is BEGIN IMMEDIATE, the
 * caller's awaited work, COMMIT, on the one connection: the runtime queues every other call of
 * this process meanwhile (`oneConnection`). Nothing tells another process of a commit: a waiter
 * for changes looks at `data_version`, which changes when another connection commits.
 */
import Database from "better-sqlite3";
import type { Logger } from "../../log.js";
import type { DriverTransaction, StoreDriver } from "../driver.js";
import type { Store } from "../store.js";
import { createStore } from "../store-runtime.js";
import type { ChangeOp, Lease } from "../types.js";
import { createAccessRepo } from "./access.js";
import { createSweepApprovalRepo } from "./approvals.js";
import { createChangeRepo } from "./changes.js";
import { createControlRepo } from "./controls.js";
import { createDryRunRepo } from "./dry-run.js";
import { readChanges } from "./feed.js";
import { createHistoryRepo } from "./history.js";
import { createLeaseRepo, expireLeftLeases } from "./leases.js";
import { createMirrorRepo } from "./mirrors.js";
import { type Db, type OpenDatabase, openDatabase } from "./open.js";
import { createPairRepo } from "./pairs.js";
import { createProblemRepo } from "./problems.js";
import { createReplicaRepo } from "./replicas.js";
import { createResourceRepo } from "./resources.js";
import { createRunRepo } from "./runs.js";
import { createScheduleRepo } from "./schedules.js";
import { applySearchSetting, rebuildSearchIndex, searchResources } from "./search.js";
import { isSqliteBusy, sqliteStoreError } from "./sqlite-errors.js";
import { createSyncConfigRepo } from "./sync-configs.js";
import { createTriggerRepo } from "./triggers.js";

export interface SqliteStoreOptions {
  /** Take the single-writer lock (every command that writes). */
  lock?: boolean;
  now?: () => Date;
  log?: Logger;
  /** The SYNCMIRROR_RETRY_EACH_TRANSACTION test seam (see `StoreRuntimeOptions`). */
  retryEachTransaction?: boolean;
}

export function openSqliteStore(path: string, options: SqliteStoreOptions = {}): Store {
  const database = openDatabase(path, { lock: options.lock });
  const now = options.now ?? (() => new Date());
  let left = new Map<string, Lease>();
  try {
    // Holding the writer lock, this is the only process: any lease or heartbeat left is a dead process's.
    if (options.lock) {
      left = expireLeftLeases(database.sqlite, now());
      database.sqlite.exec("DELETE FROM replicas");
    }
  } catch (error) {
    database.close();
    throw sqliteStoreError(error);
  }
  return createStore(createSqliteDriver(database, now, left), options);
}

function createSqliteDriver(
  database: OpenDatabase,
  now: () => Date,
  left: ReadonlyMap<string, Lease>,
): StoreDriver<Db> {
  const { db, sqlite } = database;
  const dataVersion = sqlite.prepare<[], number>("PRAGMA data_version").pluck();
  const contents = sqlite.prepare<[], { live: number; tombstones: number }>(
    "SELECT count(*) - count(deleted_at) AS live, count(deleted_at) AS tombstones FROM resources",
  );
  const changesByOp = sqlite.prepare<[], { op: ChangeOp; n: number }>(
    "SELECT op, count(*) AS n FROM changes GROUP BY op",
  );
  const transaction: DriverTransaction<Db> = {
    conn: db,
    async commit() {
      sqlite.exec("COMMIT");
    },
    async rollback() {
      try {
        if (sqlite.inTransaction) sqlite.exec("ROLLBACK");
      } catch {
        // A failed ROLLBACK (disk gone) leaves nothing committed either; the caller's error says more.
      }
    },
    async conflict() {
      throw new Database.SqliteError("database is locked (SYNCMIRROR_RETRY_EACH_TRANSACTION)", "SQLITE_BUSY");
    },
  };
  return {
    shared: db,
    oneConnection: true,
    repositories: (conn, onRecorded) => {
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
        leases: createLeaseRepo(conn, now, left),
        syncConfigs: createSyncConfigRepo(conn),
        schedules: createScheduleRepo(conn),
        replicas: createReplicaRepo(conn, now),
        controls: createControlRepo(conn),
        history: createHistoryRepo(conn),
        problems: createProblemRepo(conn),
        approvals: createSweepApprovalRepo(conn),
      };
    },
    async begin() {
      sqlite.exec("BEGIN IMMEDIATE");
      return transaction;
    },
    isRetryable: isSqliteBusy,
    toStoreError: sqliteStoreError,
    readChanges: (q) => readChanges(sqlite, q),
    search: {
      apply: (enabled) => applySearchSetting(sqlite, enabled),
      rebuild: () => rebuildSearchIndex(sqlite),
      query: (q) => searchResources(sqlite, q),
    },
    async countContents() {
      const changes = Object.fromEntries(changesByOp.all().map((c) => [c.op, c.n]));
      return { ...(contents.get() ?? { live: 0, tombstones: 0 }), changes };
    },
    changeVersion: () => dataVersion.get() as number,
    async ping() {
      sqlite.prepare("SELECT 1").get();
    },
    async close() {
      database.close();
    },
  };
}
