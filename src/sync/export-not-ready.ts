/**
 * The run list can show a run finished before its export is ready (the service is eventually
 * consistent): the export then answers 409 "not finished". Such a run is not failed but waits
 * again (docs/reference/sync-semantics.md#one-trigger-per-mirror).
 */

import { routes } from "../api/routes.js";
import { ExportNotReadyDetail } from "../api/schemas.js";
import { ConflictError } from "../errors.js";
import type { Run } from "../store/types.js";
import type { MirrorPass } from "./context.js";

/** The sources the export's 409 says are unfinished, or undefined when `error` is no such 409. */
export function exportNotReady(error: unknown): string[] | undefined {
  if (!(error instanceof ConflictError) || error.route !== routes.runExport) return undefined;
  const detail = ExportNotReadyDetail.safeParse(error.detail);
  const sources = detail.success ? (detail.data.sources ?? []) : [];
  return sources.filter((s) => s.status === "PENDING" || s.status === "RUNNING").map((s) => s.source);
}

/**
 * Back to running in the database, so the run is exported again only once a later listing (after
 * the usual backoff) shows it finished, and run_timeout_minutes gives up on it as on any run that
 * never finishes; a restart in between lists the runs first, as always.
 */
export async function waitAgain({ ctx }: MirrorPass, run: Run, unfinished: string[]): Promise<void> {
  await ctx.store.runs.updateStatus(run.syncId, "running", null);
  ctx.log.info(
    { sync_id: run.syncId, unfinished },
    "the run was listed as finished but its export is not ready yet (409); waiting for it",
  );
}
