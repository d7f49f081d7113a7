/**
 * The outcome of a pass that read its runs (docs/reference/sync-semantics.md#outcomes), decided from what the
 * settle step gathered: pure, so each rule has a test of its own.
 */
import type { Outcome } from "./outcome.js";

export interface PassFacts {
  anyRead: boolean;
  ingest: { rows: number; runsWritten: number; runsUnread: number };
  allSourcesSucceeded: boolean;
  timedOut: boolean;
  /** Pairs whose sweep the guard held (the keys they hold back are `held_revocations`). */
  sweepsHeld: number;
  leaversUnknown: boolean;
  runs: number;
  /** The last error met reading a run, when one was: the table prints the message, not the errors. */
  lastRunError?: string;
}

/**
 * `failed` only when nothing was ingested (docs/reference/sync-semantics.md#outcomes): a pass that wrote some pages and then could not
 * finish is `partial`, and says how much of what was read and what was not.
 */
export function decideOutcome(s: PassFacts): { outcome: Outcome; message: string } {
  if (!s.anyRead && s.ingest.rows === 0) {
    return {
      outcome: "failed",
      message: s.timedOut
        ? "no run finished within run_timeout_minutes; raise it or check the runs upstream"
        : s.lastRunError
          ? `no export of ${s.runs} run(s) could be read; the last error: ${s.lastRunError}`
          : "no export could be read; see the errors and the log",
    };
  }
  const problems: string[] = [];
  if (s.ingest.runsUnread > 0) {
    problems.push(
      `${s.ingest.rows} exported row(s) were ingested from ${s.ingest.runsWritten} of ${s.runs} run(s), but ${s.ingest.runsUnread} run(s) could not be read to the end (see errors); their pairs keep their watermark and nothing is swept for them`,
    );
  } else if (!s.allSourcesSucceeded) {
    problems.push("some sources did not succeed; their pairs keep their watermark");
  }
  if (s.timedOut) problems.push("some runs did not finish within run_timeout_minutes");
  if (s.sweepsHeld > 0) {
    problems.push(
      `the mass-delete guard held the sweep of ${s.sweepsHeld} pair(s): check upstream, then run syncmirror approve-sweep (the next full pass applies it) or sync --full --allow-mass-delete`,
    );
  }
  if (s.leaversUnknown)
    problems.push("the access check failed: users who left keep their access until the next full pass");
  if (problems.length > 0) return { outcome: "partial", message: problems.join("; ") };
  return { outcome: "succeeded", message: `${s.runs} run(s) ingested` };
}
