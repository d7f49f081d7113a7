/**
 * `approve-sweep` (docs/console-history.md): records in the database that the next full pass that
 * sweeps may apply the sweeps the mass-delete guard holds now, each up to the revocations it held
 * (`sync/sweep-approval.ts`), whichever process runs that pass. Who approved and when go with it
 * into the history entry of the pass that uses it.
 */
import { NothingHeldError } from "../errors.js";
import type { Store } from "../store/store.js";

export interface ApprovalJson {
  mirror: string;
  /** The held sweeps approved: the pairs, and the revocations they held in all. */
  pairs: number;
  up_to: number;
  by: string;
  at: string;
  message: string;
}

/** Throws NothingHeldError when the latest full pass held nothing. */
export async function approveSweep(
  store: Store,
  mirror: string,
  by: string,
  now: Date,
): Promise<ApprovalJson> {
  const at = now.toISOString();
  const approval = await store.transaction((tx) => tx.approvals.approve(mirror, { by, at }));
  if (approval === null) throw new NothingHeldError(mirror);
  return {
    mirror,
    pairs: approval.pairs,
    up_to: approval.upTo,
    by,
    at,
    message: `approved: the next full pass of ${mirror} applies the held sweeps of ${approval.pairs} pair(s), up to ${approval.upTo} access row(s) in all; a pair that would revoke more than it held (beyond the guard's allowance) is held again`,
  };
}
