/**
 * What the wait loop does next with one run of the trigger (docs/reference/sync-semantics.md#one-trigger-per-mirror, `continue_incomplete`): a pure decision, so the loop in `wait.ts` stays a loop.
 */
import { FINISHED_RUN_STATUSES, type RunStatus } from "../api/schemas.js";
import type { Run } from "../store/types.js";

export type RunAction =
  /** Not finished, already read or failed, or being exported now: nothing to do this round. */
  | "none"
  /** A continue counted before a crash or a lost answer: read the run and resend what never arrived. */
  | "settle-continue"
  /** INCOMPLETE with continues left and time before the deadline: send the continue message. */
  | "continue"
  /** Finished, and a slot is free: export it now. */
  | "export"
  /** Finished, but every export slot is taken: next round. */
  | "wait-for-slot";

export interface RunSituation {
  /** The latest run listing shows this run (a continue needs its current sources). */
  listed: boolean;
  /** An export of this run is already under way. */
  exporting: boolean;
  slotFree: boolean;
  continueIncomplete: number;
  beforeDeadline: boolean;
}

export function isFinished(status: string): boolean {
  return FINISHED_RUN_STATUSES.has(status as RunStatus);
}

export function nextAction(run: Run, s: RunSituation): RunAction {
  const open = run.ingest === "waiting" || run.ingest === "ingesting";
  if (!isFinished(run.status) || !open || s.exporting) return "none";
  if (run.status === "incomplete" && s.listed) {
    if (run.continuePending !== null) return "settle-continue";
    if (run.continuesSent < s.continueIncomplete && s.beforeDeadline) return "continue";
  }
  return s.slotFree ? "export" : "wait-for-slot";
}
