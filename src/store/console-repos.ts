/**
 * The operator console's repositories (docs/console-history.md): the pass history, open problems
 * and `approve-sweep` approvals; part of `StoreOps` (`store.ts`).
 */
import type {
  PassError,
  PassRecord,
  Problem,
  ProblemKind,
  ProblemSighting,
  SweepApproval,
} from "./console-types.js";
import type { PairRef } from "./types.js";

/** The pass history (docs/console-history.md): one entry per trigger row, with every error it met. */
export interface HistoryRepo {
  /** Appends errors a pass met to its trigger's history, in order. */
  addErrors(triggerRowId: number, errors: readonly PassError[]): Promise<void>;
  /** The errors kept for one trigger, in the order they were added: what `list` gives that pass. */
  errors(triggerRowId: number): Promise<PassError[]>;
  /**
   * Passes newest first by trigger row id (below `before`, and started before `startedBefore`, when
   * given), each with its errors and its runs' totals.
   */
  list(q: {
    mirror?: string | undefined;
    before?: number | undefined;
    startedBefore?: string | undefined;
    limit: number;
  }): Promise<PassRecord[]>;
  /**
   * Deletes up to `limit` passes that finished before `finishedBefore`, with their runs, sources
   * and errors; returns how many. Kept whatever their age, because the sync logic reads them: a
   * trigger in flight, each mirror's newest trigger (the bound of a full owed, by row id), its
   * newest finished trigger of each mode (the skipped gauge, the last outcome) and the trigger
   * holding its newest run (`runs.newestCreatedAt`: adoption takes only runs after it). A pruned
   * pass's approval rows go with it, and the scratch of a dry run killed before its end. `kept` is what `prunedNever` answered when the prune began:
   * what it holds stays kept, and what the sync logic reads later is newer than any pass this
   * deletes, so it need not be read again for each batch.
   */
  prune(finishedBefore: string, limit: number, kept: readonly number[]): Promise<number>;
  /** The passes `prune` keeps whatever their age (see there), by row id. */
  prunedNever(): Promise<number[]>;
}

/** Open problems (docs/console-history.md): recorded and cleared by the transactions that see them. */
export interface ProblemRepo {
  /** Inserts each problem, or updates it (its first sighting kept) when its subject is already open. */
  record(sightings: readonly ProblemSighting[]): Promise<void>;
  /** Deletes the pair's problems of `kinds`, and the user's that name no server (a rejected row without one). */
  clearPair(pair: PairRef, kinds: readonly ProblemKind[]): Promise<void>;
  /** Deletes the user's rejected-row problems whose key a run created at or after `since` ingested since. */
  clearRowsSeen(mirror: string, userEmail: string, since: string): Promise<void>;
  /** Deletes the mirror's problems of `kind` whose subject is not in `keep`. */
  clearKindExcept(mirror: string, kind: ProblemKind, keep: readonly string[]): Promise<void>;
  /**
   * Open problems (a declared sync config's apply error included, read from its record), by
   * mirror, kind and subject; at most `limit`.
   */
  list(q: { mirror?: string | undefined; limit: number }): Promise<Problem[]>;
  /** Open problems by mirror and kind, config errors included (the `syncmirror_problems` gauge). */
  countByKind(): Promise<{ mirror: string; kind: ProblemKind; n: number }[]>;
  /** Deletes problems not seen since `lastSeenBefore` (retention); returns how many. */
  pruneStale(lastSeenBefore: string): Promise<number>;
}

/**
 * `approve-sweep` (`sync/sweep-approval.ts`): the sweeps the guard holds now, approved pair by pair
 * for the next full pass that sweeps the pair, whichever process runs it.
 */
export interface SweepApprovalRepo {
  /**
   * Approves each held sweep open as a problem (`held_sweep`) up to the revocations it held,
   * replacing a pending approval of the mirror. Null, and nothing written, when none is held.
   */
  approve(mirror: string, a: { by: string; at: string }): Promise<SweepApproval | null>;
  /** Approvals no pass has taken yet, by mirror; a pair's counts while its sweep is held. */
  pending(): Promise<SweepApproval[]>;
  /**
   * The trigger takes the mirror's pending approval of each pair it sweeps, unless it took one for
   * the pair already (a pass resumed after a crash): one pass uses each. The other pairs' stay
   * pending for the next full pass, but those whose sweep is no longer held are dropped.
   */
  take(triggerRowId: number, mirror: string, sweeps: readonly PairRef[]): Promise<void>;
  /**
   * How many revocations the trigger's approval allows the pair; null when it does not cover it.
   * With `triggerRowId` null, the mirror's pending approval (what the next full pass would take).
   */
  allowance(triggerRowId: number | null, pair: PairRef): Promise<number | null>;
  /** The pair's sweep applied `revoked` revocations on the approval. */
  use(triggerRowId: number, pair: PairRef, revoked: number): Promise<void>;
}
