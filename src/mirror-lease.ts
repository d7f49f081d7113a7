/**
 * The per-mirror lease (docs/scaling-out.md#fencing): at most one process runs a mirror's pass at
 * a time. The lease is taken before the pass, renewed every third of its length while the pass
 * runs, and released after. Its epoch is the pass's fencing token: every write of the pass checks
 * it (`sync/fence.ts`), and renewal extends only the lease this pass took, never one that expired
 * or changed hands meanwhile. A pass that finds its lease gone stops and says so at error.
 */
import { LeaseLostError } from "./errors.js";
import { isDeadHereAndNow } from "./lease-holder.js";
import type { Logger } from "./log.js";
import type { Metrics } from "./metrics.js";
import type { Store } from "./store/store.js";
import type { Fence, LeaseGrant, LeaseHolder } from "./store/types.js";

export interface LeaseOptions {
  store: Store;
  mirror: string;
  holder: LeaseHolder;
  leaseSeconds: number;
  signal: AbortSignal;
  log: Logger;
  metrics: Pick<Metrics, "mirrorHeld" | "leaseTakeovers">;
}

/**
 * Runs `fn` holding the mirror's lease, with a signal that aborts when the process stops or the
 * lease is lost, and the fencing token of the lease. Returns `{ taken: false }` without running
 * `fn` when another holder has it. A lost lease rejects with LeaseLostError, logged here.
 */
export async function withMirrorLease<T>(
  options: LeaseOptions,
  fn: (signal: AbortSignal, fence: Fence) => Promise<T>,
): Promise<{ taken: true; value: T } | { taken: false }> {
  const { store, mirror, holder, leaseSeconds, log, metrics } = options;
  // When the last request the database answered with the lease was sent: it runs out one lease
  // after that on the database's clock, whatever the network does to the renewals after it.
  let confirmedAt = performance.now();
  const grant = await takeLease(options);
  if (grant === null) return { taken: false };
  const fence: Fence = { mirror, holder: holder.id, epoch: grant.epoch };
  metrics.mirrorHeld.set({ mirror }, 1);
  if (grant.tookOver) {
    metrics.leaseTakeovers.inc({ mirror });
    logTakeover(log, grant);
  }
  const lost = new AbortController();
  const signal = AbortSignal.any([options.signal, lost.signal]);
  let logged: Promise<void> = Promise.resolve();
  /**
   * Stops the pass at once and no longer counts the mirror as held here; says so, with who holds
   * the lease now when the database tells within `lookUpMs` (always waited for when not given).
   */
  const loseLease = (error: LeaseLostError, lookUpMs?: number): LeaseLostError => {
    if (lost.signal.aborted) return lost.signal.reason as LeaseLostError;
    lost.abort(error);
    metrics.mirrorHeld.set({ mirror }, 0);
    const current = store.leases.holders().then(
      (leases) => leases.get(mirror),
      () => undefined,
    );
    const told =
      lookUpMs === undefined
        ? current
        : Promise.race([
            current,
            new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), lookUpMs).unref()),
          ]);
    logged = told.then((holder) => logLost(log, fence, error, holder));
    return error;
  };
  const renew = setInterval(
    () => {
      if (lost.signal.aborted) return;
      // Renewals the database never answered (a stalled network): the lease has run out all the same.
      if (performance.now() - confirmedAt >= leaseSeconds * 1000) {
        const why = `the database confirmed no renewal for a whole lease (${leaseSeconds} s), so it has expired`;
        loseLease(new LeaseLostError(mirror, fence.epoch, why), (leaseSeconds * 1000) / 3);
        return;
      }
      const sentAt = performance.now();
      store.leases.renew(fence, leaseSeconds).then(
        (held) => {
          if (held) confirmedAt = Math.max(confirmedAt, sentAt);
          else loseLease(new LeaseLostError(mirror, fence.epoch, "renewal found it taken over or expired"));
        },
        (error: unknown) =>
          loseLease(
            new LeaseLostError(mirror, fence.epoch, `it could not be renewed (${(error as Error).message})`, {
              cause: error,
            }),
          ),
      );
    },
    (leaseSeconds * 1000) / 3,
  );
  renew.unref();
  try {
    return { taken: true, value: await fn(signal, fence) };
  } catch (error) {
    // Whatever the pass threw once its lease was gone (a fenced write, an aborted wait), the lease is why.
    if (error instanceof LeaseLostError || lost.signal.aborted) {
      const why = loseLease(error instanceof LeaseLostError ? error : (lost.signal.reason as LeaseLostError));
      await logged;
      throw why;
    }
    throw error;
  } finally {
    clearInterval(renew);
    metrics.mirrorHeld.set({ mirror }, 0);
    // Fenced by the epoch: releases nothing when the lease already changed hands.
    await store.leases.release(fence).catch(() => {});
  }
}

/** Takes the lease, or that of a holder whose process died on this host; null when held elsewhere. */
async function takeLease({ store, mirror, holder, leaseSeconds }: LeaseOptions): Promise<LeaseGrant | null> {
  const grant = await store.leases.acquire(mirror, holder, leaseSeconds);
  if (grant) return grant;
  const current = (await store.leases.holders()).get(mirror);
  if (current === undefined || !isDeadHereAndNow(current)) return null;
  return store.leases.acquire(mirror, holder, leaseSeconds, current.holder);
}

/**
 * A takeover, at warn: whose lease, and how long its mirror had no live holder, counted from the
 * dead holder's last renewal (its last sign of life: the lease it asked for, back from its expiry)
 * to this grant, both on the database's clock.
 */
function logTakeover(log: Logger, grant: LeaseGrant): void {
  const dead = grant.tookOver;
  if (!dead) return;
  const lastRenewalMs = Date.parse(dead.expiresAt) - dead.leaseSeconds * 1000;
  const takenAtMs = Date.parse(grant.takenAt);
  const orphanedSeconds = Math.max(0, (takenAtMs - lastRenewalMs) / 1000);
  const expired = Date.parse(dead.expiresAt) <= takenAtMs;
  log.warn(
    {
      mirror: dead.mirror,
      dead_holder: dead.holderName,
      dead_instance_id: dead.holder,
      dead_epoch: dead.epoch,
      dead_lease_expired_at: dead.expiresAt,
      orphaned_seconds: Math.round(orphanedSeconds * 10) / 10,
      epoch: grant.epoch,
    },
    `took over the lease of mirror ${dead.mirror} from ${dead.holderName}, ${expired ? "whose lease expired" : "whose process died on this host"} ${orphanedSeconds.toFixed(1)} s after its last renewal; its trigger in flight, if any, is resumed here`,
  );
}

function logLost(
  log: Logger,
  fence: Fence,
  error: LeaseLostError,
  current: { holderName: string; holder: string; epoch: number } | undefined,
): void {
  log.error(
    {
      mirror: fence.mirror,
      epoch: fence.epoch,
      ...(current && current.holder !== fence.holder
        ? { now_held_by: current.holderName, now_held_instance_id: current.holder, now_epoch: current.epoch }
        : {}),
    },
    error.message,
  );
}
