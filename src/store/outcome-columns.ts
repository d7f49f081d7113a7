/**
 * What `mirrors.recordOutcome` writes, the same in both dialects: the last outcome always, the last
 * success of the pass's mode when it succeeded, the held revocations when a full pass says so.
 */
import type { MirrorRepo } from "./store.js";

/** A mirror's `approve-sweep` cleared: taken by a full pass. */
export const NO_APPROVAL = { sweepApprovedUpTo: null, sweepApprovedBy: null, sweepApprovedAt: null };

/** The approval `mirrors.approveSweep` writes: every revocation the latest full pass held. */
export function approvalColumns(heldRevocations: number, a: { by: string; at: string }) {
  return { sweepApprovedUpTo: heldRevocations, sweepApprovedBy: a.by, sweepApprovedAt: a.at };
}

type OutcomeRecord = Parameters<MirrorRepo["recordOutcome"]>[1];

export function outcomeColumns(o: OutcomeRecord): {
  lastOutcome: string;
  lastOutcomeAt: string;
  lastMessage: string;
  lastFullSuccessAt?: string;
  lastIncrementalSuccessAt?: string;
  heldRevocations?: number;
} {
  const success = o.outcome === "succeeded";
  return {
    lastOutcome: o.outcome,
    lastOutcomeAt: o.at,
    lastMessage: o.message,
    ...(success && o.mode === "full" ? { lastFullSuccessAt: o.at } : {}),
    ...(success && o.mode === "incremental" ? { lastIncrementalSuccessAt: o.at } : {}),
    ...(o.heldRevocations !== undefined ? { heldRevocations: o.heldRevocations } : {}),
  };
}
