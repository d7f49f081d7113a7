/**
 * What counts as success (docs/reference/sync-semantics.md#pairs-and-success, docs/reference/sync-semantics.md#outcomes).
 */
import type { Run, RunSource } from "../store/types.js";

export const OUTCOMES = ["succeeded", "partial", "failed", "refused"] as const;
export type Outcome = (typeof OUTCOMES)[number];

const GOOD_EXPORT_STATUSES = new Set(["ok", "no_results"]);

/**
 * The source itself finished well: its task COMPLETED and its export is ok or no_results (whether
 * every page of it was then ingested is the run's part of `sourceSucceeded`).
 */
export function sourceDelivered(s: Pick<RunSource, "taskStatus" | "exportStatus">): boolean {
  return s.taskStatus === "COMPLETED" && s.exportStatus !== null && GOOD_EXPORT_STATUSES.has(s.exportStatus);
}

/**
 * A source succeeds when its task COMPLETED, its export is ok or no_results, and every page is in.
 * A run with a resource refused for its shape counts as a page not fully read: a key missing from
 * the snapshot for that reason must not be swept as a crawl miss.
 */
export function sourceSucceeded(
  run: Pick<Run, "ingest" | "rejected">,
  s: Pick<RunSource, "taskStatus" | "exportStatus">,
): boolean {
  return run.ingest === "done" && run.rejected === 0 && sourceDelivered(s);
}

/** Exit code of `sync`: 0 only when every selected mirror succeeded. */
export function exitCodeFor(outcomes: readonly Outcome[]): 0 | 1 {
  return outcomes.every((o) => o === "succeeded") ? 0 : 1;
}
