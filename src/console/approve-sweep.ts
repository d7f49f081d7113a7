/**
 * `approve-sweep` (SPEC "Operator console"): records in the database that the next full pass that
 * sweeps may apply the revocations the mirror's latest full pass held, up to that number
 * (`sync/sweep-approval.ts`), whichever process runs it. Who approved and when go with it into the
 * history entry of the pass that uses it.
 */
import { NothingHeldError } from "../errors.js";
import type { Store } from "../store/store.js";

export interface ApprovalJson {
  mirror: string;
  /** The next full pass may revoke up to this many access rows the guard would hold. */
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
  const approval = await store.transaction((tx) => tx.mirrors.approveSweep(mirror, { by, at }));
  if (approval === null) throw new NothingHeldError(mirror);
  return {
    mirror,
    up_to: approval.upTo,
    by,
    at,
    message: `approved: the next full pass of ${mirror} may revoke up to ${approval.upTo} access row(s) the mass-delete guard held; a pair that would take it past that is held again`,
  };
}
