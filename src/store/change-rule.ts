/**
 * The change feed's one rule, shared by both dialects: at most one change per key per scope (a
 * run's sync_id, or a sweep's id), and a later change replaces an earlier one only if it says more.
 */
import type { ChangeOp } from "./types.js";

/** Whether an earlier change of the key in the same scope already says what `next` would. */
export function priorStands(prior: ChangeOp, next: ChangeOp): boolean {
  return prior === next || (prior === "upsert" && next === "access");
}
