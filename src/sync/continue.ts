/**
 * Continuing INCOMPLETE sources (`continue_incomplete`) exactly once each, across crashes and lost
 * answers. Before the POST the count and each source's `completed_at` are written together; once
 * every POST is answered they are cleared. If they are still there when the run is next seen (the
 * process died in between, or an answer was lost), the run is read: a source still INCOMPLETE with
 * the same `completed_at` never got the message and is sent it now (not counted again); a source
 * that ran again since did get it.
 */
import type { RunDetail } from "../api/schemas.js";
import { ApiError, ContinueOutcomeUnknownError, NotFoundError, UnauthorizedError } from "../errors.js";
import type { PendingContinue, Run } from "../store/types.js";
import type { MirrorPass } from "./context.js";
import { fencedPost } from "./fence.js";

/** Sends the run's INCOMPLETE sources a continue message, counted once. */
export async function sendContinue(pass: MirrorPass, run: Run): Promise<void> {
  const { ctx } = pass;
  const detail = await ctx.api.getRun(run.syncId, ctx.signal);
  const pending: PendingContinue = {};
  for (const s of detail.sources) if (s.status === "INCOMPLETE") pending[s.source] = s.completed_at ?? null;
  // The listing was older than the detail: the next listing shows where the run is now.
  if (Object.keys(pending).length === 0) return;
  await ctx.store.runs.countContinue(run.syncId, pending);
  ctx.crashPoint("during-continue");
  await post(pass, run, Object.keys(pending), run.continuesSent + 1);
}

/** Settles a continue counted earlier whose arrival is unknown: resends what never arrived. */
export async function settlePendingContinue(pass: MirrorPass, run: Run): Promise<void> {
  const { ctx } = pass;
  const pending = run.continuePending ?? {};
  const detail = await ctx.api.getRun(run.syncId, ctx.signal);
  const undelivered = Object.entries(pending)
    .filter(([source, completedAt]) => stillAsLeft(detail, source, completedAt))
    .map(([source]) => source);
  if (undelivered.length === 0) {
    await ctx.store.runs.clearContinuePending(run.syncId);
    return;
  }
  ctx.log.warn(
    { sync_id: run.syncId, sources: undelivered },
    "a continue counted before a crash or a lost answer never arrived: sending it now",
  );
  await post(pass, run, undelivered, run.continuesSent);
}

function stillAsLeft(detail: RunDetail, source: string, completedAt: string | null): boolean {
  const s = detail.sources.find((x) => x.source === source);
  return s?.status === "INCOMPLETE" && (s.completed_at ?? null) === completedAt;
}

async function post(pass: MirrorPass, run: Run, sources: string[], attempt: number): Promise<void> {
  const { ctx, mirror } = pass;
  const log = ctx.log.child({ sync_id: run.syncId });
  let unknown = false;
  for (const source of sources) {
    try {
      await ctx.api.continueRun(
        run.syncId,
        { message: mirror.continueMessage, source },
        ctx.signal,
        fencedPost(ctx),
      );
      log.info({ source, attempt }, "continued an INCOMPLETE source");
    } catch (error) {
      if (error instanceof ContinueOutcomeUnknownError) {
        unknown = true;
        log.warn(
          { source, err: error.message },
          "continue got no answer; the run is read before it is sent again",
        );
        continue;
      }
      // A continue is a second chance, not the run: one the service refuses (409, or Background
      // Sync turned off since the trigger: reading the run and its export still works), or cannot
      // take after every retry, leaves the source as it finished and the run is exported as it is.
      // A run gone (404) or a rejected token are the caller's to handle.
      if (notTaken(error)) {
        log.warn({ source, err: error.message }, "continue not accepted; the source stays as it is");
        continue;
      }
      throw error;
    }
  }
  if (!unknown) await ctx.store.runs.clearContinuePending(run.syncId);
  // Until the next listing says otherwise, the run is running again.
  await ctx.store.runs.updateStatus(run.syncId, "running", null);
}

function notTaken(error: unknown): error is ApiError {
  return (
    error instanceof ApiError && !(error instanceof NotFoundError) && !(error instanceof UnauthorizedError)
  );
}
