/**
 * The mass-delete guard with `approve-sweep` (SPEC "Full", "Operator console"). A pair's sweep that
 * would revoke more than `max_delete_fraction` of its keys, and more than MASS_DELETE_MIN_KEYS, is
 * held, unless the trigger allows mass deletes (`sync --full --allow-mass-delete`) or it fits what
 * is left of the approval the trigger took.
 *
 * `approve-sweep` approves the revocations the mirror's latest full pass held, as a number: the
 * next full pass that sweeps takes the approval (one-shot, from the database, so whichever process
 * runs that pass obeys it) and may apply, across the pairs the guard would hold, up to that many
 * revocations in all. A pair that would take it past the number is held again, as without the
 * approval; pairs within the guard's normal allowance are applied as always and use none of it.
 */
import type { Trigger } from "../store/types.js";

/** A sweep that would revoke more than this many keys (and more than the fraction) is held. */
export const MASS_DELETE_MIN_KEYS = 10;

export type GuardDecision =
  /** Within the guard's allowance, or mass deletes allowed: applied. */
  | { apply: true; approvedUsed: 0 }
  /** Beyond the allowance, applied on the approval: it uses that many of it. */
  | { apply: true; approvedUsed: number }
  | { apply: false };

export function decideGuard(
  pair: { revocable: number; total: number },
  maxDeleteFraction: number,
  trigger: Pick<Trigger, "allowMassDelete" | "sweepApprovedUpTo" | "sweepApprovedUsed">,
): GuardDecision {
  const guarded = pair.revocable > MASS_DELETE_MIN_KEYS && pair.revocable > maxDeleteFraction * pair.total;
  if (!guarded || trigger.allowMassDelete) return { apply: true, approvedUsed: 0 };
  const left = (trigger.sweepApprovedUpTo ?? 0) - trigger.sweepApprovedUsed;
  return pair.revocable <= left ? { apply: true, approvedUsed: pair.revocable } : { apply: false };
}
