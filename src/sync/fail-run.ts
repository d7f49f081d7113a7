/**
 * A run given up on (its export unreadable, vanished upstream, past run_timeout_minutes): marked
 * failed, and the reason kept in the pass's history, in one transaction. Also how any error a
 * pass met is written for its history (`passError`).
 */
import type { PassError } from "../store/console-types.js";
import type { Run, Trigger } from "../store/types.js";
import type { SyncContext } from "./context.js";

export async function failRun(
  ctx: SyncContext,
  trigger: Pick<Trigger, "id">,
  run: Pick<Run, "syncId" | "userEmail">,
  message: string,
): Promise<void> {
  const error = passError(ctx, message, run);
  await ctx.store.transaction(async (tx) => {
    await tx.runs.setIngest(run.syncId, "failed", message);
    await tx.history.addErrors(trigger.id, [error]);
  });
}

/**
 * An error this process met, as the pass's history keeps it: of `run`, or of the whole attempt
 * without one; met now unless `at` says when.
 */
export function passError(
  ctx: Pick<SyncContext, "now" | "replica">,
  error: string,
  run?: Pick<Run, "syncId" | "userEmail">,
  at: Date = ctx.now(),
): PassError {
  return {
    at: at.toISOString(),
    syncId: run?.syncId ?? null,
    userEmail: run?.userEmail ?? null,
    source: null,
    error,
    replica: ctx.replica?.name ?? null,
  };
}
