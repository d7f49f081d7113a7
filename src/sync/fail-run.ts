/**
 * A run given up on (its export unreadable, vanished upstream, past run_timeout_minutes): marked
 * failed, and the reason kept in the pass's history, in one transaction.
 */
import type { Run, Trigger } from "../store/types.js";
import type { SyncContext } from "./context.js";

export async function failRun(
  ctx: SyncContext,
  trigger: Pick<Trigger, "id">,
  run: Pick<Run, "syncId" | "userEmail">,
  message: string,
): Promise<void> {
  const at = ctx.now().toISOString();
  await ctx.store.transaction(async (tx) => {
    await tx.runs.setIngest(run.syncId, "failed", message);
    await tx.history.addErrors(trigger.id, [
      {
        at,
        syncId: run.syncId,
        userEmail: run.userEmail,
        source: null,
        error: message,
        replica: ctx.replica?.name ?? null,
      },
    ]);
  });
}
