/**
 * Fencing (SPEC "Scale-out"): each write transaction of a pass first checks, in the database and
 * in that same transaction, that this process still holds the mirror's lease. A replica that was
 * cut off long enough for another to take over cannot commit anything afterwards.
 */
import { AbortedError } from "../errors.js";
import type { StoreOps } from "../store/store.js";
import type { MirrorPass } from "./context.js";

export async function assertLeaseHeld({ ctx, mirror }: MirrorPass, tx: StoreOps): Promise<void> {
  if (ctx.holder === undefined) return;
  if (await tx.leases.isHeld(mirror.name, ctx.holder)) return;
  throw new AbortedError(
    `the lease on mirror ${mirror.name} expired or was taken over: this pass stops and the holder resumes it`,
  );
}
