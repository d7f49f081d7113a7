/**
 * The store runtime: a `Store` over any dialect's driver (`driver.ts`), written once.
 *
 * - Transactions of one process run one at a time, on a queue: the sync code reasons about one
 *   page at a time, and two transactions of one process never deadlock each other. On a driver
 *   that pipelines, the next transaction begins as soon as the previous one's COMMIT is sent, on
 *   the same connection behind it (`sendCommit`): it costs no round trip of its own to begin, sees
 *   everything committed before it, and transactions still commit one at a time and in order.
 * - Work started from inside a transaction (same async context) joins it rather than wait for it.
 * - Outside a transaction, a driver with one connection (SQLite) queues every call, since it would
 *   otherwise land inside the open transaction; a pool (PostgreSQL) runs it at once.
 * - A transaction that another writer got in the way of (the driver says which errors) is rolled
 *   back and run again from the start, up to ATTEMPTS times, queued again behind what came
 *   meanwhile (whoever queued that did not wait for it): callbacks return what happened and leave
 *   metrics and logs to their caller, after the commit.
 * - After a commit that recorded changes, the commit listeners are called; never after a rollback.
 * - Whatever the database throws reaches the caller as the driver's DatabaseError (or another
 *   SyncmirrorError it chose); errors of the caller's own code pass through untouched.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { SyncmirrorError } from "../errors.js";
import type { Logger } from "../log.js";
import { guardRepositories, routeRepositories } from "./bind-repositories.js";
import type { DriverTransaction, SentCommit, StoreDriver } from "./driver.js";
import type { Store, StoreOps } from "./store.js";
import { waitForChange } from "./wait-for-change.js";

const ATTEMPTS = 4;

const noop = () => {};

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
  /** The open transaction appended changes (transactions run one at a time until their COMMIT is sent). */
  let recorded = false;
  let closed: Promise<void> | undefined;
  /** The last transaction whose COMMIT was sent: the next may begin behind it (`sendCommit`). */
  let committing: SentCommit<C> | undefined;
  /** Commits sent and not yet answered: `close` waits for them. */
  const answering = new Set<Promise<void>>();

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
  const onRecorded = () => {
    recorded = true;
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

  /**
   * Runs `work` after everything queued before it, or after what came before it called its
   * `release`; the queue survives a failure.
   */
  const enqueue = <T>(work: (release: () => void) => Promise<T>): Promise<T> => {
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const result = queue.then(() => work(release));
    queue = Promise.race([released, result.then(noop, noop)]);
    return result;
  };
  /** Work outside a transaction: joined to the caller's transaction, queued, or at once (see above). */
  const outside = <T>(work: () => Promise<T>): Promise<T> => {
    if (current.getStore() || !driver.oneConnection) return guarded(work);
    return enqueue(() => guarded(work));
  };

  const begin = (): Promise<DriverTransaction<C>> => {
    const behind = committing?.next();
    committing = undefined;
    return behind ? Promise.resolve(behind) : guarded(() => driver.begin());
  };

  /** Commits `tx`; on a driver that pipelines, the queue moves on once the COMMIT is sent. */
  const commit = async (tx: DriverTransaction<C>, changed: boolean, release: () => void) => {
    if (!tx.sendCommit) return guarded(() => tx.commit(changed));
    const sent = tx.sendCommit(changed);
    committing = sent;
    answering.add(sent.done);
    release();
    try {
      await guarded(() => sent.done);
    } finally {
      answering.delete(sent.done);
    }
  };

  async function attempt<T>(
    fn: (tx: StoreOps) => Promise<T>,
    first: boolean,
    release: () => void,
  ): Promise<T> {
    const tx = await begin();
    recorded = false;
    let sending = false;
    try {
      const ops = opsOf(tx.conn);
      const result = await current.run(ops, () => fn(ops));
      if (first && options.retryEachTransaction) await guarded(() => tx.conflict());
      const changed = recorded;
      sending = true;
      await commit(tx, changed, release);
      if (changed) wake();
      return result;
    } catch (error) {
      // A COMMIT that was sent ended the transaction either way, and the connection may already
      // carry the next one.
      if (!sending || !tx.sendCommit) await tx.rollback();
      throw error;
    }
  }

  function transaction<T>(fn: (tx: StoreOps) => Promise<T>): Promise<T> {
    const joined = current.getStore();
    if (joined) return fn(joined);
    const run = async (n: number): Promise<T> => {
      try {
        return await enqueue((release) => attempt(fn, n === 1, release));
      } catch (error) {
        if (n >= ATTEMPTS || !driver.isRetryable(error)) throw error;
        options.log?.debug(
          { attempt: n, err: (error as Error).message },
          "transaction rolled back: another writer got in the way; running it again",
        );
        return run(n + 1);
      }
    };
    return run(1);
  }

  const { changes: _changes, ...root } = routeRepositories(
    opsOf(driver.shared),
    () => current.getStore(),
    outside,
  );
  const onCommit = (listener: () => void) => {
    driver.watchCommits?.(wake, heard);
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
    };
  };
  // The feed's waiters also wake when the driver starts hearing other processes' commits: one
  // that committed between a waiter's read and then told no one (`changes --follow` started as a
  // pass committed waited for the next commit, up to the 30 s backstop; a daemon's first
  // `/v1/changes?wait=` answered empty when its wait ran out).
  const feedWaiters = new Set<() => void>();
  const heard = () => {
    for (const waiter of [...feedWaiters]) waiter();
  };
  const onFeedChange = (listener: () => void) => {
    feedWaiters.add(listener);
    const off = onCommit(listener);
    return () => {
      off();
      feedWaiters.delete(listener);
    };
  };
  const changeVersion = driver.changeVersion?.bind(driver);
  return {
    ...root,
    feed: {
      readChanges: (q) => outside(() => driver.readChanges(q)),
      waitForChange: (signal) => waitForChange({ onCommit: onFeedChange, changeVersion }, signal),
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
      closed ??= queue.then(() => Promise.allSettled(answering)).then(() => driver.close());
      return closed;
    },
  };
}
