/**
 * What a dialect hands the store runtime (`store-runtime.ts`), Kysely's driver/adapter split: the
 * driver opens and ends transactions on its connections, says which of its errors are worth a
 * retry and how any of them reads as ours, and answers capability questions (does a commit by
 * another process reach us, or must we look). Its repositories hold the SQL. Everything else
 * (the queue, joining an open transaction, the retry rule, commit listeners, error
 * normalisation, turning repositories into the async `StoreOps`) is written once, in the runtime.
 */
import type { SyncmirrorError } from "../errors.js";
import type { FeedPage, FeedQuery } from "./consumer-types.js";
import type { SearchIndex, StoreContents, StoreOps } from "./store.js";

/** A repository as a dialect writes it: synchronous (better-sqlite3) or async (pg) methods. */
export type DirectRepo<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => Promise<infer R>
    ? (...args: A) => R | Promise<R>
    : never;
};

/** Every repository of `StoreOps`, over one connection. */
export type Repositories = { [K in keyof StoreOps]: DirectRepo<StoreOps[K]> };

/**
 * Called by the changes repository when it appended changes: the runtime tells `commit`, and
 * wakes the commit listeners after a commit that recorded any.
 */
export type OnRecorded = () => void;

/** One open transaction on one connection. */
export interface DriverTransaction<C> {
  readonly conn: C;
  /**
   * Commits; `recorded`: the transaction appended changes (PostgreSQL gives them their seqs in
   * commit order and NOTIFYs). Gives the connection back when it succeeds;
   * when it throws, the runtime calls `rollback`.
   */
  commit(recorded: boolean): Promise<void>;
  /**
   * For a connection that pipelines (PostgreSQL): sends the commit without waiting for its answer,
   * so the process's next transaction need not wait a round trip for it. Until the answer arrives,
   * `next()` begins that transaction on this connection, behind the COMMIT: the server runs it
   * after this one has committed (or failed to), so it sees this one's writes, and the connection
   * is the new transaction's from then on; after the answer, `next()` returns undefined. `done`
   * settles with the commit's outcome; a failed commit leaves nothing to roll back.
   */
  sendCommit?(recorded: boolean): SentCommit<C>;
  /** Rolls back (if anything is open) and gives the connection back; never throws. */
  rollback(): Promise<void>;
  /**
   * Fails the open transaction the way a conflicting writer would (an error `isRetryable`
   * accepts): the SYNCMIRROR_RETRY_EACH_TRANSACTION test seam, never used otherwise.
   */
  conflict(): Promise<void>;
}

export interface SentCommit<C> {
  done: Promise<void>;
  next(): DriverTransaction<C> | undefined;
}

export interface StoreDriver<C extends object> {
  /** The connection (or pool) for work outside a transaction. */
  readonly shared: C;
  /**
   * True when transactions run on `shared` itself (SQLite: one connection per process): work
   * outside a transaction then waits for the open one instead of landing inside it.
   */
  readonly oneConnection: boolean;
  /** The repositories over `conn`; the runtime asks once per connection and keeps them. */
  repositories(conn: C, onRecorded: OnRecorded): Repositories;
  begin(): Promise<DriverTransaction<C>>;
  /** Another writer got in the way (deadlock, serialization failure, busy): run it again from the start. */
  isRetryable(error: unknown): boolean;
  /** A driver error as ours: a DatabaseError whose message says what to do, with no secret in it. */
  toStoreError(error: unknown): SyncmirrorError;
  /** The change feed's page read, in one consistent snapshot. */
  readChanges(q: FeedQuery): Promise<FeedPage>;
  search: SearchIndex;
  countContents(): Promise<StoreContents>;
  /**
   * A number that changes when another process commits (SQLite's `data_version`), for a driver
   * that cannot be told: a waiter for changes polls it. Absent when `watchCommits` tells.
   */
  changeVersion?(): number;
  /**
   * Calls `wake` whenever another process commits changes (PostgreSQL LISTEN), and `listening`
   * each time it starts hearing them (a commit before then told no one); idempotent.
   */
  watchCommits?(wake: () => void, listening: () => void): void;
  /** Throws when the database cannot be reached (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The driver's own error under whatever wrapped it (drizzle's "Failed query: ..." carries the
 * statement and its parameters, and the driver's error as its `cause`): the innermost cause.
 */
export function driverError(error: unknown): unknown {
  let e = error;
  while (e instanceof Error && e.cause !== undefined) e = e.cause;
  return e;
}

/** The `code` of an error and of each error it wraps (`cause`), outermost first. */
export function errorCodes(error: unknown): string[] {
  const codes: string[] = [];
  for (let e = error as { code?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (typeof e.code === "string") codes.push(e.code);
  }
  return codes;
}
