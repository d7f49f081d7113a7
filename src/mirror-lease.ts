/**
 * The per-mirror lease (SPEC "Scale-out"): at most one process runs a mirror's pass at a time.
 * The lease is taken before the pass, renewed every third of its length while the pass runs, and
 * released after; a replica that cannot renew it (the database gone, or another replica took it
 * over after expiry) aborts its pass, and the page transactions check it too (`sync/fence.ts`),
 * so a replica cut off from the database can never commit after its lease ran out.
 */
import { hostname } from "node:os";
import { AbortedError } from "./errors.js";
import type { Logger } from "./log.js";
import type { Store } from "./store/store.js";

/** This process, as `status` shows it: `hostname:pid`. */
export function processHolder(): string {
  return `${hostname()}:${process.pid}`;
}

/**
 * A holder on this host whose process is gone (killed, crashed): its lease need not run out before
 * a restarted process on the same host takes the mirror over.
 */
function isDeadHereAndNow(holder: string): boolean {
  const at = holder.lastIndexOf(":");
  const host = holder.slice(0, at);
  const pid = Number(holder.slice(at + 1));
  if (host !== hostname() || !Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
}

export interface LeaseOptions {
  store: Store;
  mirror: string;
  holder: string;
  leaseSeconds: number;
  signal: AbortSignal;
  log: Logger;
}

/**
 * Runs `fn` holding the mirror's lease, with a signal that aborts when the process stops or the
 * lease is lost. Returns `{ taken: false }` without running `fn` when another holder has it.
 */
export async function withMirrorLease<T>(
  options: LeaseOptions,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<{ taken: true; value: T } | { taken: false }> {
  const { store, mirror, holder, leaseSeconds, log } = options;
  if (!(await store.leases.acquire(mirror, holder, leaseSeconds))) {
    const current = (await store.leases.holders()).get(mirror)?.holder;
    if (current === undefined || !isDeadHereAndNow(current)) return { taken: false };
    if (!(await store.leases.acquire(mirror, holder, leaseSeconds, current))) return { taken: false };
    log.warn({ mirror, dead_holder: current }, "took over the lease of a process that died on this host");
  }
  const lost = new AbortController();
  const signal = AbortSignal.any([options.signal, lost.signal]);
  const renew = setInterval(
    () => {
      store.leases.acquire(mirror, holder, leaseSeconds).then(
        (held) => {
          if (!held) loseLease("another replica took the lease over");
        },
        (error: unknown) => loseLease(`the lease could not be renewed (${(error as Error).message})`),
      );
    },
    Math.max(1000, (leaseSeconds * 1000) / 3),
  );
  renew.unref();
  function loseLease(why: string): void {
    if (lost.signal.aborted) return;
    log.error({ mirror }, `${why}: stopping this pass; the replica holding the lease resumes it`);
    lost.abort(new AbortedError(`lease on mirror ${mirror} lost: ${why}`));
  }
  try {
    return { taken: true, value: await fn(signal) };
  } finally {
    clearInterval(renew);
    if (!lost.signal.aborted) await store.leases.release(mirror, holder).catch(() => {});
  }
}
