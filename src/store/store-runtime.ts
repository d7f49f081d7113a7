/**
 * The store runtime: a `Store` over any dialect's driver (`driver.ts`), written once.
 *
 * - Transactions of one process run one at a time, on a queue: the sync code reasons about one
 *   page at a time, and two transactions of one process never deadlock each other.
 * - Work started from inside a transaction (same async context) joins it rather than wait for it.
 * - Outside a transaction, a driver with one connection (SQLite) queues every call, since it would
 *   otherwise land inside the open transaction; a pool (PostgreSQL) runs it at once.
 * - A transaction that another writer got in the way of (the driver says which errors) is rolled
 *   back and run again from the start, up to ATTEMPTS times: callbacks return what happened and
 *   leave metrics and logs to their caller, after the commit.
 * - After a commit that recorded changes, the commit listeners are called; never after a rollback.
 * - Whatever the database throws reaches the caller as the driver's DatabaseError (or another
 *   SyncmirrorError it chose); errors of the caller's own code pass through untouched.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { SyncmirrorError } from "../errors.js";
import type { Logger } from "../log.js";
import { guardRepositories, routeRepositories } from "./bind-repositories.js";
import type { StoreDriver } from "./driver.js";
import type { Store, StoreOps } from "./store.js";
import { waitForChange } from "./wait-for-change.js";

const ATTEMPTS = 4;

export interface StoreRuntimeOptions {
  /** Where a retried transaction is noted (debug). */
  log?: Logger;
  /**
   * The SYNCMIRROR_RETRY_EACH_TRANSACTION test seam: the first attempt of every transaction fails
   * at its commit as a conflicting writer would make it fail, so every callback runs twice.
   */
  retryEachTransaction?: boolean;
}

export function createStore<C extends object>(
  driver: StoreDriver<C>,
  options: StoreRuntimeOptions = {},
): Store {
  const current = new AsyncLocalStorage<StoreOps>();
  const listeners = new Set<() => void>();
  const opsByConn = new WeakMap<C, StoreOps>();
  let queue: Promise<unknown> = Promise.resolve();
  let recorded: number[] = [];
  let closed: Promise<void> | undefined;

  const fail = (error: unknown): unknown =>
    error instanceof SyncmirrorError ? error : driver.toStoreError(error);
  const guarded = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      throw fail(error);
    }
  };
  /** Changes are recorded inside transactions only, and transactions run one at a time. */
  const onRecorded = (seq: number) => {
    recorded.push(seq);
  };
  const opsOf = (conn: C): StoreOps => {
    let ops = opsByConn.get(conn);
    if (!ops) {
      ops = guardRepositories(driver.repositories(conn, onRecorded), fail);
      opsByConn.set(conn, ops);
    }
    return ops;
  };
  const wake = () => {
    for (const listener of listeners) listener();
  };

  /** Runs `work` after everything queued before it; the queue survives a failure. */
  const enqueue = <T>(work: () => Promise<T>): Promise<T> => {
    const result = queue.then(work);
    queue = result.catch(() => {});
    return result;
  };
  /** Work outside a transaction: joined to the caller's transaction, queued, or at once (see above). */
  const outside = <T>(work: () => Promise<T>): Promise<T> => {
    if (current.getStore() || !driver.oneConnection) return guarded(work);
    return enqueue(() => guarded(work));
  };

  async function attempt<T>(fn: (tx: StoreOps) => Promise<T>, first: boolean): Promise<T> {
    const tx = await guarded(() => driver.begin());
    recorded = [];
    try {
      const ops = opsOf(tx.conn);
      const result = await current.run(ops, () => fn(ops));
      if (first && options.retryEachTransaction) await guarded(() => tx.conflict());
      const seqs = recorded;
      await guarded(() => tx.commit(seqs));
      if (seqs.length > 0) wake();
      return result;
    } catch (error) {
      await tx.rollback();
      throw error;
    }
  }

  function transaction<T>(fn: (tx: StoreOps) => Promise<T>): Promise<T> {
    const joined = current.getStore();
    if (joined) return fn(joined);
    return enqueue(async () => {
      for (let n = 1; ; n++) {
        try {
          return await attempt(fn, n === 1);
        } catch (error) {
          if (n >= ATTEMPTS || !driver.isRetryable(error)) throw error;
          options.log?.debug(
            { attempt: n, err: (error as Error).message },
            "transaction rolled back: another writer got in the way; running it again",
          );
        }
      }
    });
  }

  const { changes: _changes, ...root } = routeRepositories(
    opsOf(driver.shared),
    () => current.getStore(),
    outside,
  );
  const onCommit = (listener: () => void) => {
    driver.watchCommits?.(wake);
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
    };
  };
  const changeVersion = driver.changeVersion?.bind(driver);
  return {
    ...root,
    feed: {
      readChanges: (q) => outside(() => driver.readChanges(q)),
      waitForChange: (signal) => waitForChange({ onCommit, changeVersion }, signal),
    },
    search: {
      apply: (enabled) => outside(() => driver.search.apply(enabled)),
      rebuild: () => outside(() => driver.search.rebuild()),
      query: (q) => outside(() => driver.search.query(q)),
    },
    transaction,
    onCommit,
    countContents: () => outside(() => driver.countContents()),
    ping: () => outside(() => driver.ping()),
    close() {
      closed ??= queue.then(() => driver.close());
      return closed;
    },
  };
}
