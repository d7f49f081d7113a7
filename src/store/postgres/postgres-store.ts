/**
 * The PostgreSQL store (SPEC "Scale-out"): a pool shared by any number of replicas' processes.
 *
 * Within one process, transactions run one at a time on a queue, as on SQLite: the sync code
 * reasons about one page at a time, and two transactions of one process can never deadlock each
 * other. Work started from inside a transaction (same async context) joins it. Replicas writing
 * the same keys may still deadlock or conflict: such a transaction is retried from the start.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { drizzle } from "drizzle-orm/node-postgres";
import pg from "pg";
import type { Logger } from "../../log.js";
import type { Store, StoreOps } from "../store.js";
import { createAccessRepo } from "./access.js";
import { createChangeRepo, publishChanges } from "./changes.js";

export { CHANGES_CHANNEL } from "./changes.js";

import type { Conn } from "./connection.js";
import { createDryRunRepo } from "./dry-run.js";
import { readChanges } from "./feed.js";
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
import { createResourceRepo } from "./resources.js";
import { createRunRepo } from "./runs.js";
import * as schema from "./schema.js";
import { applySearchSetting, rebuildSearchIndex, searchResources } from "./search.js";
import { createSyncConfigRepo } from "./sync-configs.js";
import { createTriggerRepo } from "./triggers.js";

export interface PostgresStore extends Store {
  readonly dialect: "postgres";
}

export interface PostgresStoreOptions {
  url: string;
  /** Named in messages instead of the URL, which carries a password. */
  urlEnv: string;
  poolSize: number;
  log: Logger;
}

/** deadlock_detected, serialization_failure: another replica wrote the same rows. */
const RETRIED_CODES = new Set(["40P01", "40001"]);
const ATTEMPTS = 4;

type OnRecorded = (seq: number) => void;

export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  const naming = createNaming(options.url, options.urlEnv);
  const pool = createPool(options.url, options.poolSize, naming);
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on("error", (error) => {
    options.log.warn(
      { err: naming.redact(error.message) },
      `${naming.database}: an idle connection was lost`,
    );
  });
  try {
    await migrateUnderLock(pool, naming);
  } catch (error) {
    await pool.end().catch(() => {});
    throw error;
  }
  return createPostgresStore(pool, naming, options);
}

function createPostgresStore(pool: pg.Pool, naming: Naming, options: PostgresStoreOptions): PostgresStore {
  const current = new AsyncLocalStorage<StoreOps>();
  const listeners = new Set<() => void>();
  const wake = () => {
    for (const listener of listeners) listener();
  };
  const notifications = createChangeListener({
    connect: () => new pg.Client(clientConfig(options.url)),
    wake,
    log: options.log,
    naming,
  });
  let queue: Promise<unknown> = Promise.resolve();
  let closed: Promise<void> | undefined;

  const build = (conn: Conn, onRecorded: OnRecorded): StoreOps => {
    const guard = <T extends object>(repo: T): T => guardErrors(repo, naming);
    return {
      resources: guard(createResourceRepo(conn)),
      access: guard(createAccessRepo(conn)),
      changes: guard(createChangeRepo(conn, onRecorded)),
      pairs: guard(createPairRepo(conn)),
      triggers: guard(createTriggerRepo(conn)),
      runs: guard(createRunRepo(conn)),
      mirrors: guard(createMirrorRepo(conn)),
      dryRun: guard(createDryRunRepo(conn)),
      leases: guard(createLeaseRepo(conn)),
      syncConfigs: guard(createSyncConfigRepo(conn)),
    };
  };
  const pooled = build({ db: drizzle(pool, { schema }), client: pool }, () => {});

  /** One attempt: BEGIN, `fn`, the changes it recorded published (renumbered, NOTIFY), COMMIT. */
  async function attempt<T>(fn: (tx: StoreOps) => Promise<T>): Promise<{ result: T; recorded: boolean }> {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw storeError(error, naming);
    }
    const recorded: number[] = [];
    const tx = build({ db: drizzle(client, { schema }), client }, (seq) => {
      recorded.push(seq);
    });
    let broken: Error | undefined;
    // A connection lost between statements is reported by the next statement; meanwhile the
    // client's own error event must not take the process down.
    const onLost = (error: Error) => {
      broken = error;
    };
    client.on("error", onLost);
    try {
      await guarded(() => client.query("BEGIN"));
      const result = await current.run(tx, () => fn(tx));
      if (recorded.length > 0) await guarded(() => publishChanges(client, recorded));
      await guarded(() => client.query("COMMIT"));
      return { result, recorded: recorded.length > 0 };
    } catch (error) {
      await client.query("ROLLBACK").catch((rollbackError: Error) => {
        broken = rollbackError;
      });
      throw error;
    } finally {
      client.off("error", onLost);
      client.release(broken);
    }
  }

  const guarded = async (work: () => Promise<unknown>): Promise<void> => {
    try {
      await work();
    } catch (error) {
      throw storeError(error, naming);
    }
  };

  async function transaction<T>(fn: (tx: StoreOps) => Promise<T>): Promise<T> {
    const joined = current.getStore();
    if (joined) return fn(joined);
    const run = async (): Promise<T> => {
      for (let n = 1; ; n++) {
        try {
          const { result, recorded } = await attempt(fn);
          if (recorded) wake();
          return result;
        } catch (error) {
          if (n >= ATTEMPTS || !isRetried(error)) throw error;
        }
      }
    };
    const result = queue.then(run);
    queue = result.catch(() => {});
    return result;
  }

  const root = routeToTransaction(pooled, current, (record) => transaction((tx) => record(tx)));
  return {
    dialect: "postgres",
    ...root,
    // Reads and DDL on their own pool clients: they never join nor wait for this process's queue.
    feed: guardErrors({ readChanges: (q) => readChanges(pool, q) }, naming),
    search: guardErrors(
      {
        apply: (enabled) => applySearchSetting(pool, enabled),
        rebuild: () => rebuildSearchIndex(pool),
        query: (q) => searchResources(pool, q),
      },
      naming,
    ),
    transaction,
    /** This process's commits at once; other processes' through LISTEN (a second wake-up is harmless). */
    onCommit(listener) {
      notifications.ensure();
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async ping() {
      try {
        await pool.query("SELECT 1");
      } catch (error) {
        throw connectError(error, naming);
      }
    },
    close() {
      closed ??= queue.then(async () => {
        await notifications.close();
        await pool.end();
      });
      return closed;
    },
  };
}

function isRetried(error: unknown): boolean {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (typeof e.code === "string" && RETRIED_CODES.has(e.code)) return true;
  }
  return false;
}

/** Every method of `repo`, with whatever the driver throws raised as the store's DatabaseError. */
function guardErrors<T extends object>(repo: T, naming: Naming): T {
  const guarded: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(repo as Record<string, (...args: unknown[]) => Promise<unknown>>)) {
    guarded[name] = async (...args: unknown[]) => {
      try {
        return await fn(...args);
      } catch (error) {
        throw storeError(error, naming);
      }
    };
  }
  return guarded as T;
}

/**
 * The store's own repositories: inside a running transaction's async context they join it; outside
 * one they use the pool, except a change, which is recorded in a transaction of its own so that
 * its NOTIFY and the commit listeners follow it as they follow a page.
 */
function routeToTransaction(
  pooled: StoreOps,
  current: AsyncLocalStorage<StoreOps>,
  inOwnTransaction: (record: (tx: StoreOps) => Promise<boolean[]>) => Promise<boolean[]>,
): StoreOps {
  const routed: Record<string, Record<string, unknown>> = {};
  for (const [repoName, repo] of Object.entries(pooled) as [keyof StoreOps, object][]) {
    const methods: Record<string, unknown> = {};
    for (const method of Object.keys(repo)) {
      methods[method] = (...args: unknown[]) => {
        const call = (ops: StoreOps) =>
          (ops[repoName] as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[method]?.(
            ...args,
          );
        const tx = current.getStore();
        if (tx) return call(tx);
        if (repoName === "changes") return inOwnTransaction((own) => call(own) as Promise<boolean[]>);
        return call(pooled);
      };
    }
    routed[repoName] = methods;
  }
  return routed as unknown as StoreOps;
}
