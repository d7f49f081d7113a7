/**
 * Fencing (docs/scaling-out.md): every write of a pass happens in a transaction that first checks, in
 * the database and in that same transaction, that the pass's fencing token (mirror, holder, epoch)
 * still holds the mirror's lease unexpired. A replica paused, partitioned or slow past its lease
 * cannot commit anything after another took over, even once the new holder's lease has expired in
 * turn: the epoch moved on.
 *
 * The pass sees the store through `fencedStore`: its transactions check the token first, and each
 * repository call that writes runs as such a transaction of its own. Only calls listed as reads
 * here go straight to the store, so a write method added later is fenced unless declared a read.
 */
import type { PostHooks } from "../api/client.js";
import { LeaseLostError } from "../errors.js";
import { isDatabaseError, type Store, type StoreOps } from "../store/store.js";
import type { Fence } from "../store/types.js";

type Methods = Record<string, (...args: unknown[]) => Promise<unknown>>;
/** The repositories the store offers outside a transaction (changes are recorded only inside one). */
type Repo = Exclude<keyof StoreOps, "changes">;
type Reads = { readonly [R in Repo]: readonly (keyof StoreOps[R])[] };

const READS: Reads = {
  resources: ["findState", "findStates"],
  access: [
    "keysWithAccess",
    "countPairKeys",
    "countRevocable",
    "countRevocableEach",
    "countRevocableKeys",
    "pairsWithAccess",
    "countLive",
    "countKeysSeenSince",
  ],
  pairs: ["listForMirror", "countAwaitingBaseline"],
  triggers: ["findInFlight", "get", "lastFinished", "lastIntentAt"],
  runs: ["newestCreatedAt", "isKnown", "ofTrigger", "get", "sourcesOf", "sourcesOfTrigger"],
  mirrors: ["get", "retired", "known"],
  dryRun: [],
  leases: ["isHeld", "holders"],
  syncConfigs: ["find", "list"],
  schedules: ["find", "list", "lock"],
  replicas: ["live"],
  controls: ["list"],
  history: ["list", "errors"],
  problems: ["list", "countByKind"],
  approvals: ["pending", "allowance"],
};

/** Throws LeaseLostError unless `fence` still holds the lease; run first in a transaction. */
async function assertLeaseHeld(fence: Fence, tx: Pick<StoreOps, "leases">): Promise<void> {
  if (await tx.leases.isHeld(fence)) return;
  throw new LeaseLostError(
    fence.mirror,
    fence.epoch,
    "another process took the lease over, or it expired before this write",
  );
}

/**
 * Hooks for a POST upstream (a trigger, a continue message) that a pass sends: each attempt first
 * checks the pass's lease. A database write before the POST is fenced, but a retry after a 429 or
 * 503 wait is not: a replica paused in that wait must not post once another replica took over.
 */
export function fencedPost(ctx: { lease?: Fence; store: Pick<StoreOps, "leases"> }): PostHooks {
  const { lease } = ctx;
  return lease ? { beforeAttempt: () => assertLeaseHeld(lease, ctx.store) } : {};
}

/**
 * `store` as a pass holding `fence` uses it: every write fenced. A write that failed in the
 * database (on PostgreSQL, the session of a holder frozen inside a transaction is ended) while the
 * lease is gone is reported as the lost lease it is.
 */
export function fencedStore(store: Store, fence: Fence): Store {
  const transaction = async <T>(fn: (tx: StoreOps) => Promise<T>): Promise<T> => {
    try {
      return await store.transaction(async (tx) => {
        // Checked first in the transaction, but not waited for before `fn` starts: its statements
        // follow the check on the connection (one round trip for both on PostgreSQL) and the
        // transaction commits only once the check has held; a lost lease rolls back whatever `fn` did.
        const held = assertLeaseHeld(fence, tx);
        held.catch(() => {});
        let result: T;
        try {
          result = await fn(tx);
        } catch (error) {
          await held;
          throw error;
        }
        await held;
        return result;
      });
    } catch (error) {
      if (!isDatabaseError(error) || (await store.leases.isHeld(fence).catch(() => true))) throw error;
      throw new LeaseLostError(
        fence.mirror,
        fence.epoch,
        `a write failed (${(error as Error).message}) and the lease had been taken over or had expired meanwhile`,
        { cause: error },
      );
    }
  };
  const repos = {} as Record<Repo, unknown>;
  for (const name of Object.keys(READS) as Repo[]) {
    const reads = new Set<string>(READS[name] as readonly string[]);
    const repo = store[name] as unknown as Methods;
    const wrapped: Methods = {};
    for (const [method, call] of Object.entries(repo)) {
      wrapped[method] = reads.has(method)
        ? call.bind(repo)
        : (...args) =>
            transaction(async (tx) => {
              const own = tx[name] as unknown as Methods;
              return own[method]?.call(own, ...args);
            });
    }
    repos[name] = wrapped;
  }
  return {
    ...(repos as unknown as Omit<StoreOps, "changes">),
    feed: store.feed,
    search: store.search,
    transaction,
    onCommit: (listener) => store.onCommit(listener),
    countContents: () => store.countContents(),
    ping: () => store.ping(),
    close: () => store.close(),
  };
}
