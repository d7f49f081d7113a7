/**
 * Retention of the pass history (`history.keep_days`): passes that finished longer ago are deleted
 * with their runs and errors, a batch per transaction, except the ones the sync logic still reads
 * (`HistoryRepo.prune` says which); problems not seen for as long go too. The daemon runs it at
 * start-up and every hour, `sync` after its passes; any process may, at the same time as others
 * (deleting is idempotent).
 */
import { setImmediate as yieldToEvents } from "node:timers/promises";
import type { Logger } from "../log.js";
import type { Store } from "../store/store.js";

/** Passes deleted per transaction: a first prune of a long history never holds the database long. */
const PRUNE_BATCH = 200;
const DAY_MS = 86_400_000;
/** How often the daemon prunes (and once at start-up). */
const PRUNE_EVERY_MS = 3_600_000;

export interface Pruned {
  passes: number;
  problems: number;
}

/**
 * Stops between batches once `signal` aborts (what is deleted stays deleted; the next round goes
 * on). Each batch hands the event loop a turn: on SQLite a batch is synchronous, and a first prune
 * of a long history would otherwise keep a stop signal and `/healthz` waiting until its end.
 */
export async function pruneHistory(
  store: Store,
  keepDays: number,
  now: Date,
  signal?: AbortSignal,
): Promise<Pruned> {
  const before = new Date(now.getTime() - keepDays * DAY_MS).toISOString();
  let passes = 0;
  let problems = 0;
  let kept: number[] = [];
  for (let first = true; ; first = false) {
    await yieldToEvents();
    if (signal?.aborted) return { passes, problems };
    // The first batch goes with the read of what is kept and the stale problems, issued at once:
    // the usual round, after a pass, with nothing to delete, is one transaction (two round trips
    // on PostgreSQL), where it took three.
    const batch = await store.transaction(async (tx) => {
      const [keep, stale] = first
        ? await Promise.all([tx.history.prunedNever(), tx.problems.pruneStale(before)])
        : [kept, 0];
      return { keep, stale, n: await tx.history.prune(before, PRUNE_BATCH, keep) };
    });
    kept = batch.keep;
    problems += batch.stale;
    passes += batch.n;
    if (batch.n < PRUNE_BATCH) return { passes, problems };
  }
}

/**
 * One round of retention, as the daemon runs it every hour and `sync` after its passes: what was
 * pruned is logged after its commit; a failure is logged, never thrown (the next round tries again).
 */
export async function pruneOnce(
  store: Store,
  keepDays: number,
  log: Logger,
  signal: AbortSignal,
  retry = "the next sync or daemon tries again",
): Promise<void> {
  try {
    const pruned = await pruneHistory(store, keepDays, new Date(), signal);
    if (pruned.passes > 0 || pruned.problems > 0)
      log.info({ ...pruned, keep_days: keepDays }, "history pruned");
  } catch (error) {
    log.warn({ err: (error as Error).message }, `could not prune the history; ${retry}`);
  }
}

/**
 * The daemon's retention: prunes now (resolving once done) and every hour until stopped. A failure
 * is logged and waits for the next round; what was pruned is logged after its commit.
 */
export async function startHistoryPruning(deps: {
  store: Store;
  keepDays: number;
  log: Logger;
  signal: AbortSignal;
}): Promise<{ stop(): void }> {
  const { store, keepDays, log, signal } = deps;
  const round = () => pruneOnce(store, keepDays, log, signal, "trying again within the hour");
  await round();
  const timer = setInterval(() => void round(), PRUNE_EVERY_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
