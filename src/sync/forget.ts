/**
 * `syncmirror forget` (docs/operations.md#removing-a-mirror): a mirror removed from the config has
 * no pass any more, so nothing sweeps the access it grants. Forgetting it revokes that access the
 * way a sweep revokes a leaver's (an `access` change for a key another mirror still grants, a
 * tombstone and a `delete` for one nobody sees any more), then deletes the mirror's own state.
 *
 * Under the mirror's lease, as a pass: never beside a pass of a process whose config still names
 * it. A transaction per batch of a pair's keys, then one for the state: killed at any instant,
 * what is left is a retired mirror with fewer access rows, which `forget` finishes when run again.
 */
import { MirrorBusyError, UsageError } from "../errors.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics.js";
import { withMirrorLease } from "../mirror-lease.js";
import type { Store } from "../store/store.js";
import type { LeaseHolder, RetiredMirror } from "../store/types.js";
import type { SyncContext } from "./context.js";
import { fencedStore } from "./fence.js";
import { type Revocations, revokeBatch, revokeInTransactions } from "./revoke.js";

export interface ForgetJson {
  mirror: string;
  /** Distinct users and keys its access rows granted. */
  users: number;
  keys: number;
  /** Access rows removed, and resources no mirror grants any more (now tombstones). */
  access_revoked: number;
  resources_deleted: number;
  message: string;
}

export interface ForgetOptions {
  store: Store;
  /** The mirrors the config names: none of them may be forgotten. */
  configured: readonly string[];
  holder: LeaseHolder;
  leaseSeconds: number;
  signal: AbortSignal;
  log: Logger;
  metrics: Metrics;
  now: () => Date;
  crashPoint: SyncContext["crashPoint"];
}

/** The mirror forgotten; UsageError for a configured or unknown name, MirrorBusyError (nothing done) while another process holds its lease. */
export async function forgetMirror(mirror: string, options: ForgetOptions): Promise<ForgetJson> {
  const { store, configured } = options;
  if (configured.includes(mirror))
    throw new UsageError(
      `mirror ${mirror} is in the config: remove it from the config first (forget revokes only a mirror no pass runs for)`,
    );
  if (!(await findRetired(store, configured, mirror)))
    throw new UsageError(`the database knows no mirror named "${mirror}": nothing to forget`);
  const leased = await withMirrorLease({ ...options, mirror }, async (signal, fence) => {
    const fenced = fencedStore(store, fence);
    // Read again under the lease: a pass that ended meanwhile may have changed what it grants.
    const retired = (await findRetired(store, configured, mirror)) ?? { mirror, users: 0, keys: 0 };
    return { retired, done: await revokeAll(fenced, mirror, signal, options) };
  });
  if (!leased.taken)
    throw new MirrorBusyError(mirror, (await store.leases.holders()).get(mirror)?.holderName ?? null);
  const { retired, done } = leased.value;
  return {
    mirror,
    users: retired.users,
    keys: retired.keys,
    access_revoked: done.revoked,
    resources_deleted: done.deleted,
    message: `forgot mirror ${mirror}: revoked ${done.revoked} access row(s) of ${retired.users} user(s) to ${retired.keys} key(s), ${done.deleted} resource(s) no other mirror grants deleted (tombstones); its state is removed, its history kept`,
  };
}

async function findRetired(
  store: Store,
  configured: readonly string[],
  mirror: string,
): Promise<RetiredMirror | undefined> {
  return (await store.mirrors.retired(configured)).find((r) => r.mirror === mirror);
}

/** Each pair's access revoked a batch a transaction (`revokeInTransactions`), then the mirror's state deleted. */
async function revokeAll(
  store: Store,
  mirror: string,
  signal: AbortSignal,
  options: ForgetOptions,
): Promise<Revocations> {
  const { now, metrics, crashPoint } = options;
  // A scope of its own: the changes feed keeps at most one change per key per scope, so a mirror
  // forgotten again later (after it came back) records its changes anew. So does a run that
  // finishes a killed one: a change of the killed run's scope may no longer be a key's latest (a
  // pass of another mirror recorded one since), and leaving out an `access` it already said would
  // hide the access removed now from a consumer that read the later change.
  const scope = `forget:${mirror}:${now().toISOString()}`;
  const total: Revocations = { revoked: 0, deleted: 0 };
  for (const pair of await store.access.pairsWithAccess(mirror)) {
    // Stopped (a signal, the lease lost) between two pairs: what committed stays, the rest waits for the next run.
    signal.throwIfAborted();
    const revoked = await revokeInTransactions({ store, metrics, crashPoint }, mirror, (tx) =>
      revokeBatch({ now }, tx, mirror, (limit) => tx.access.revokePair(pair, limit), scope),
    );
    total.revoked += revoked.revoked;
    total.deleted += revoked.deleted;
    crashPoint("mid-forget");
  }
  crashPoint("before-forget-state");
  await store.transaction((tx) => tx.mirrors.forget(mirror));
  return total;
}
