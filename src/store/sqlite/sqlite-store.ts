/**
 * The SQLite store: one file, one connection, one writer process (the lock in `open.ts`).
 *
 * better-sqlite3 runs each statement synchronously, so an async transaction is BEGIN, the
 * caller's awaited work, COMMIT; other work of this process waits on a queue meanwhile, since it
 * would otherwise land inside the open transaction on the shared connection. Work started from
 * inside a transaction (same async context) runs in it rather than waiting for it.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Store, StoreOps } from "../store.js";
import { createAccessRepo } from "./access.js";
import { createChangeRepo } from "./changes.js";
import { createDryRunRepo } from "./dry-run.js";
import { readChanges } from "./feed.js";
import { createLeaseRepo } from "./leases.js";
import { createMirrorRepo } from "./mirrors.js";
import { type OpenDatabase, openDatabase } from "./open.js";
import { createPairRepo } from "./pairs.js";
import { createResourceRepo } from "./resources.js";
import { createRunRepo } from "./runs.js";
import { applySearchSetting, rebuildSearchIndex, searchResources } from "./search.js";
import { createSyncConfigRepo } from "./sync-configs.js";
import { promisify } from "./sync-repo.js";
import { createTriggerRepo } from "./triggers.js";

export interface SqliteStore extends Store {
  readonly dialect: "sqlite";
  /** The open database (tests, `demo`, and the consumer queries read it directly). */
  readonly database: OpenDatabase;
}

export function openSqliteStore(
  path: string,
  options: { lock?: boolean; now?: () => Date } = {},
): SqliteStore {
  const database = openDatabase(path, { lock: options.lock });
  const { db, sqlite } = database;
  // Holding the writer lock, this is the only process: any lease left is a dead process's.
  if (options.lock) sqlite.exec("DELETE FROM leases");
  const inTransaction = new AsyncLocalStorage<true>();
  const listeners = new Set<() => void>();
  let recorded = false;
  let queue: Promise<unknown> = Promise.resolve();

  /** Runs `fn` after everything queued before it; the queue survives a failure. */
  const exclusive = <R>(fn: () => R | Promise<R>): Promise<R> => {
    if (inTransaction.getStore()) return Promise.resolve().then(fn);
    const result = queue.then(fn);
    queue = result.catch(() => {});
    return result;
  };

  // One set of repositories (their statements prepared once), run directly inside a transaction
  // and through the queue outside one.
  const repos = {
    resources: createResourceRepo(db),
    access: createAccessRepo(db),
    changes: createChangeRepo(db, () => {
      recorded = true;
    }),
    pairs: createPairRepo(db),
    triggers: createTriggerRepo(db),
    runs: createRunRepo(db),
    mirrors: createMirrorRepo(db),
    dryRun: createDryRunRepo(db),
    leases: createLeaseRepo(db, options.now ?? (() => new Date())),
    syncConfigs: createSyncConfigRepo(db),
  };
  const build = (run: <R>(fn: () => R) => Promise<R>): StoreOps => ({
    resources: promisify(repos.resources, run),
    access: promisify(repos.access, run),
    changes: promisify(repos.changes, run),
    pairs: promisify(repos.pairs, run),
    triggers: promisify(repos.triggers, run),
    runs: promisify(repos.runs, run),
    mirrors: promisify(repos.mirrors, run),
    dryRun: promisify(repos.dryRun, run),
    leases: promisify(repos.leases, run),
    syncConfigs: promisify(repos.syncConfigs, run),
  });
  const direct = build(async (fn) => fn());
  const root = build((fn) =>
    exclusive(() => {
      const result = fn();
      // Inside a transaction the commit notifies; a rollback must not have told anyone.
      if (!inTransaction.getStore()) notifyIfRecorded();
      return result;
    }),
  );

  function notifyIfRecorded(): void {
    if (!recorded) return;
    recorded = false;
    for (const listener of listeners) listener();
  }

  return {
    dialect: "sqlite",
    database,
    ...root,
    // Queued like any other work: on the shared connection a read would otherwise land inside an
    // open page transaction and see rows that may still roll back.
    feed: { readChanges: (q) => exclusive(() => readChanges(sqlite, q)) },
    search: {
      apply: (enabled) => exclusive(() => applySearchSetting(sqlite, enabled)),
      rebuild: () => exclusive(() => rebuildSearchIndex(sqlite)),
      query: (q) => exclusive(() => searchResources(sqlite, q)),
    },
    transaction<T>(fn: (tx: StoreOps) => Promise<T>): Promise<T> {
      if (inTransaction.getStore()) return fn(direct);
      return exclusive(() =>
        inTransaction.run(true, async () => {
          sqlite.exec("BEGIN IMMEDIATE");
          try {
            const result = await fn(direct);
            sqlite.exec("COMMIT");
            notifyIfRecorded();
            return result;
          } catch (error) {
            recorded = false;
            if (sqlite.inTransaction) sqlite.exec("ROLLBACK");
            throw error;
          }
        }),
      );
    },
    onCommit(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async ping() {
      sqlite.prepare("SELECT 1").get();
    },
    async close() {
      database.close();
    },
  };
}
