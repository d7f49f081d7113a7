/**
 * What `mirrors.recordOutcome` writes, the same in both dialects: the last outcome always, the last
 * success of the pass's mode when it succeeded, the held revocations when a full pass says so.
 */
import type { MirrorRepo } from "./store.js";

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
