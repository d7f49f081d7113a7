/**
 * The mass-delete guard with `approve-sweep` (docs/reference/sync-semantics.md#full-snapshots-and-sweeps, docs/console-history.md). A pair's sweep that
 * would revoke more than `max_delete_fraction` of its keys, and more than MASS_DELETE_MIN_KEYS, is
 * held, unless the trigger allows mass deletes (`sync --full --allow-mass-delete`) or an approval
 * the trigger took covers it.
 *
 * `approve-sweep` approves, pair by pair, the sweeps held now (the open `held_sweep` problems),
 * each up to the revocations it held. It is stored in the database, a row per pair, and each
 * pair's is taken by the next full pass that sweeps the pair, whichever process runs it, so
 * exactly one pass uses it; a pass in which the pair's source did not succeed does not sweep it
 * and leaves its approval pending. An approval lasts as long as the held sweep it approves (the
 * `held_sweep` problem): once that sweep applied otherwise or the pair was retired, it is dropped.
 * In the pass that takes it a pair's sweep is applied when it would revoke no more than was
 * approved for it plus the guard's normal allowance for the pair (what it would let through
 * unapproved); a pair that would revoke more, or one the approval does not name, is held as
 * before, and approving again covers the new count.
 */

/** A sweep that would revoke more than this many keys (and more than the fraction) is held. */
export const MASS_DELETE_MIN_KEYS = 10;

export type GuardDecision =
  /** Applied; `approved`: on the approval (the guard alone would have held it). */
  { apply: true; approved: boolean } | { apply: false };

export function decideGuard(
  pair: { revocable: number; total: number },
  c: { maxDeleteFraction: number; allowMassDelete: boolean; approved: number | null },
): GuardDecision {
  const allowance = Math.max(MASS_DELETE_MIN_KEYS, c.maxDeleteFraction * pair.total);
  if (pair.revocable <= allowance || c.allowMassDelete) return { apply: true, approved: false };
  if (c.approved !== null && pair.revocable <= c.approved + allowance) return { apply: true, approved: true };
  return { apply: false };
}
