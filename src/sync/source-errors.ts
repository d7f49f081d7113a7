/**
 * The service's own error text of a run's sources that did not succeed. The run list and the export
 * carry none; the run's detail (`GET /sync-task/{sync_id}`) does, per source. Read once, before
 * the run's last page is written, only when one of its sources did not deliver.
 */
import { AbortedError, FeatureDisabledError, UnauthorizedError } from "../errors.js";
import type { Run, SourceReport } from "../store/types.js";
import type { MirrorPass } from "./context.js";
import { sourceDelivered } from "./outcome.js";

/** Source label -> the service's error text (null: it gave none, or the detail could not be read). */
export type SourceErrors = ReadonlyMap<string, string | null>;

export async function readSourceErrors(
  { ctx }: MirrorPass,
  run: Run,
  /** The run's sources as its first page and the run list give them. */
  sources: readonly Pick<SourceReport, "taskStatus" | "exportStatus">[],
): Promise<SourceErrors> {
  if (sources.every(sourceDelivered)) return new Map();
  try {
    const detail = await ctx.api.getRun(run.syncId, ctx.signal);
    return new Map(detail.sources.map((s) => [s.source, s.error ?? null]));
  } catch (error) {
    // A token or feature problem stops the pass, as it does for the export; anything else only
    // costs the problem its text.
    if (
      error instanceof AbortedError ||
      error instanceof UnauthorizedError ||
      error instanceof FeatureDisabledError ||
      ctx.signal.aborted
    )
      throw error;
    ctx.log.warn(
      { sync_id: run.syncId, err: (error as Error).message },
      "could not read the run's detail: its failed sources are listed without the service's error text",
    );
    return new Map();
  }
}
