/**
 * The store runtime: a `Store` over any dialect's driver (`driver.ts`), written once.
 *
 * - Transactions of one process run one at a time, on a queue: the sync code reasons about one
 *   page at a time, and two transactions of one process never deadlock each other. On a driver
 *   that pipelines, the next transaction begins as soon as the previous one's COMMIT is sent, on
 *   the same connection behind it (`sendCommit`): it costs no round trip of its own to begin, sees
 *   everything committed before it, and transactions still commit one at a time and in order.
 * - A callback that returns its writes issued (`afterWrites`) has its COMMIT sent behind them
 *   before their answers (once every call waiting on an answer to issue its next statement is done,
 *   `RecordHooks.hold`, and no statement was refused on the client): a page costs one round trip
 *   of waiting instead of two. A failed write rolls the transaction back (the COMMIT after it only
 *   rolls back) and fails it as if it had been awaited; the transaction behind it goes on.
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
import type { DriverTransaction, RecordHooks, SentCommit, StoreDriver } from "./driver.js";
import { type Store, type StoreOps, type Written, writesOf } from "./store.js";
import { waitForChange } from "./wait-for-change.js";

const ATTEMPTS = 4;

const noop = () => {};
const nextTick = () => new Promise<void>((resolve) => process.nextTick(resolve));

/** One attempt of a transaction, as its repository calls report it (`RecordHooks`). */
interface AttemptState {
  /** It appended changes. */
  recorded: boolean;
  /** It issued a statement that may append changes. */
  mayRecord: boolean;
  /** Its calls still to issue a statement after another's answer. */
  held: Set<Promise<unknown>>;
}

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
  /**
   * The open transaction of the async context: its repositories, and what its calls report
   * (`RecordHooks`), kept by context since a statement's answer may arrive after the next
   * transaction began behind the COMMIT. One storage: each one more costs every promise of the
   * process a little (Node's async hooks).
   */
  const current = new AsyncLocalStorage<{ ops: StoreOps; state: AttemptState }>();
  const listeners = new Set<() => void>();
  const opsByConn = new WeakMap<C, StoreOps>();
  let queue: Promise<unknown> = Promise.resolve();
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
  /** Changes are recorded inside transactions only. */
  const hooks: RecordHooks = {
    recorded: () => {
      const state = current.getStore()?.state;
      if (state) state.recorded = true;
    },
    mayRecord: () => {
      const state = current.getStore()?.state;
      if (state) state.mayRecord = true;
    },
    hold: (work) => {
      const held = current.getStore()?.state?.held;
      if (!held) return work;
      held.add(work);
      const gone = () => held.delete(work);
      work.then(gone, gone);
      return work;
    },
  };
  const opsOf = (conn: C): StoreOps => {
    let ops = opsByConn.get(conn);
    if (!ops) {
      ops = guardRepositories(driver.repositories(conn, hooks), fail);
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

  /**
   * A callback's `written` value, its writes issued (calls still waiting for an answer before their
   * next statement waited for) and not refused on the client: a statement the client refuses
   * before sending it fails on the next tick, and must not leave the COMMIT committing the rest.
   */
  const issued = async (writes: Promise<unknown>, { held }: AttemptState): Promise<void> => {
    let refused: { error: unknown } | undefined;
    writes.catch((error: unknown) => {
      refused = { error };
    });
    while (held.size > 0) await Promise.allSettled(held);
    // Twice: a tick queued from a microtask runs only once every microtask queued before it has,
    // so the second one follows a refusal's rejection however many promises it passes through. Not
    // a turn of the event loop (setImmediate), which would queue the COMMIT behind the other runs'
    // row checks.
    await nextTick();
    await nextTick();
    if (refused) throw fail(refused.error);
  };

  async function attempt<T>(
    fn: (tx: StoreOps) => Promise<T | Written<T>>,
    first: boolean,
    release: () => void,
  ): Promise<T> {
    const tx = await begin();
    const state: AttemptState = { recorded: false, mayRecord: false, held: new Set() };
    let sending = false;
    try {
      const ops = opsOf(tx.conn);
      const result = await current.run({ ops, state }, () => fn(ops));
      const writes = writesOf(result);
      // Without a COMMIT to send ahead (SQLite), the writes are answered first, as any callback's.
      if (writes && !tx.sendCommit) await guarded(() => writes);
      else if (writes) await issued(writes, state);
      if (first && options.retryEachTransaction) await guarded(() => tx.conflict());
      // A COMMIT sent ahead of the writes' answers publishes whatever they may append.
      const changed = state.recorded || (writes !== undefined && state.mayRecord);
      sending = true;
      if (writes && tx.sendCommit) {
        const [wrote, committed] = await Promise.allSettled([writes, commit(tx, changed, release)]);
        // A failed write is the cause; the COMMIT behind it only rolled back.
        if (wrote.status === "rejected") throw fail(wrote.reason);
        if (committed.status === "rejected") throw committed.reason;
      } else await commit(tx, changed, release);
      if (state.recorded) wake();
      return (writes ? (result as Written<T>).value : result) as T;
    } catch (error) {
      // A COMMIT that was sent ended the transaction either way, and the connection may already
      // carry the next one.
      if (!sending || !tx.sendCommit) await tx.rollback();
      throw error;
    }
  }

  function transaction<T>(fn: (tx: StoreOps) => Promise<T | Written<T>>): Promise<T> {
    const joined = current.getStore()?.ops;
    if (joined) return joinedTransaction(fn(joined));
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

  /** A transaction joined by another of the same async context: its writes are answered before it returns. */
  async function joinedTransaction<T>(result: Promise<T | Written<T>>): Promise<T> {
    const value = await result;
    const writes = writesOf(value);
    if (!writes) return value as T;
    await writes;
    return (value as Written<T>).value;
  }

  const { changes: _changes, ...root } = routeRepositories(
    opsOf(driver.shared),
    () => current.getStore()?.ops,
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
