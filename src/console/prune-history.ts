/**
 * Retention of the pass history (`history.keep_days`): passes that finished longer ago are deleted
 * with their runs and errors, a batch per transaction, except the ones the sync logic still reads
 * (`HistoryRepo.prune` says which); problems not seen for as long go too. The daemon runs it at
 * start-up and every hour; any replica may, at the same time as others (deleting is idempotent).
 */
import type { Store } from "../store/store.js";

/** Passes deleted per transaction: a first prune of a long history never holds the database long. */
const PRUNE_BATCH = 200;
const DAY_MS = 86_400_000;

export interface Pruned {
  passes: number;
  problems: number;
}

export async function pruneHistory(store: Store, keepDays: number, now: Date): Promise<Pruned> {
  const before = new Date(now.getTime() - keepDays * DAY_MS).toISOString();
  let passes = 0;
  for (;;) {
    const n = await store.transaction((tx) => tx.history.prune(before, PRUNE_BATCH));
    passes += n;
    if (n < PRUNE_BATCH) break;
  }
  const problems = await store.transaction((tx) => tx.problems.pruneStale(before));
  return { passes, problems };
}
