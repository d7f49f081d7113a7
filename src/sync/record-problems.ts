/**
 * What a run's pages show the operator (docs/console-history.md), written inside the page
 * transactions that ingest them, so a page rolled back or run again records nothing twice: the
 * rows each page rejected, and at the run's last page each source's problem recorded or cleared,
 * with the errors the pass met kept in its history.
 */

import type { PassError, ProblemSighting } from "../store/console-types.js";
import type { StoreOps } from "../store/store.js";
import type { Run, RunSource } from "../store/types.js";
import { sourceDelivered, sourceSucceeded } from "./outcome.js";
import { problemSubject } from "./problem-subject.js";
import type { SourceErrors } from "./source-errors.js";

/** A resource a page refused: its key when it had one, the server it names, why. */
export interface RejectedRow {
  key: string | undefined;
  serverInstanceId: string | null;
  reason: string;
}

/** Where the facts were met: the mirror, the local time, the process. */
export interface Sighting {
  mirror: string;
  at: string;
  replica: string | null;
}

/** One problem per rejected key; the page's rows without a key as one problem of the user's. */
export async function recordRejectedRows(
  tx: StoreOps,
  where: Sighting,
  run: Pick<Run, "syncId" | "userEmail">,
  rejected: readonly RejectedRow[],
): Promise<void> {
  if (rejected.length === 0) return;
  const sighting = (r: RejectedRow, key: string | null, count: number | null): ProblemSighting => ({
    mirror: where.mirror,
    kind: "rejected_row",
    subject: problemSubject("row", run.userEmail, key),
    userEmail: run.userEmail,
    serverInstanceId: key === null ? null : r.serverInstanceId,
    source: null,
    syncId: run.syncId,
    key,
    reason: r.reason,
    count,
    at: where.at,
  });
  const keyless = rejected.filter((r) => r.key === undefined);
  const sightings = rejected.flatMap((r) => (r.key === undefined ? [] : [sighting(r, r.key, null)]));
  const [first] = keyless;
  if (first) sightings.push(sighting(first, null, keyless.length));
  await tx.problems.record(sightings);
}

/**
 * The run's last page is in: a pair that ran is no longer skipped; a source that delivered clears
 * its pair's source problem (and, when the whole run was ingested cleanly, its rejected rows); one
 * that did not is a problem and an error of the pass, with the service's own text. Rejected rows
 * whose key this run ingested fine are cleared too.
 */
export async function recordRunOutcome(
  tx: StoreOps,
  where: Sighting & { triggerRowId: number },
  run: Run,
  sources: readonly RunSource[],
  serviceErrors: SourceErrors,
): Promise<void> {
  const errors = runErrors(where, run, sources, serviceErrors, { dryRun: false });
  const sightings: ProblemSighting[] = [];
  // Issued at once, in order (one round trip on PostgreSQL): a 500-run trigger's last pages stay a
  // few round trips each.
  const writes: Promise<void>[] = [];
  for (const s of sources) {
    const pair = { mirror: where.mirror, userEmail: run.userEmail, serverInstanceId: s.serverInstanceId };
    if (sourceDelivered(s)) {
      const fixed = sourceSucceeded(run, s) ? (["rejected_row"] as const) : [];
      writes.push(
        tx.problems.clearPair(pair, ["skipped_pair", "failed_source", "incomplete_source", ...fixed]),
      );
      continue;
    }
    writes.push(tx.problems.clearPair(pair, ["skipped_pair"]));
    const reason = describeSource(s, serviceErrors.get(s.source) ?? null);
    sightings.push({
      mirror: where.mirror,
      kind: s.taskStatus === "INCOMPLETE" ? "incomplete_source" : "failed_source",
      subject: problemSubject("source", run.userEmail, s.serverInstanceId),
      userEmail: run.userEmail,
      serverInstanceId: s.serverInstanceId,
      source: s.source,
      syncId: run.syncId,
      key: null,
      reason,
      count: null,
      at: where.at,
    });
  }
  if (run.createdAt !== null)
    writes.push(tx.problems.clearRowsSeen(where.mirror, run.userEmail, run.createdAt));
  writes.push(tx.problems.record(sightings), tx.history.addErrors(where.triggerRowId, errors));
  await Promise.all(writes);
}

/**
 * The pass's errors for a run read to the end: each source that did not deliver, in the service's
 * words, and the rows refused for their shape. A dry run writes no problem, yet keeps these, or its
 * history would say `partial` without why.
 */
export function runErrors(
  where: Sighting,
  run: Pick<Run, "syncId" | "userEmail" | "rejected">,
  sources: readonly Pick<RunSource, "source" | "taskStatus" | "exportStatus">[],
  serviceErrors: SourceErrors,
  { dryRun }: { dryRun: boolean },
): PassError[] {
  const errors = sources
    .filter((s) => !sourceDelivered(s))
    .map((s) => runError(where, run, s.source, describeSource(s, serviceErrors.get(s.source) ?? null)));
  if (run.rejected > 0)
    errors.push(
      runError(
        where,
        run,
        null,
        `${run.rejected} exported row(s) were rejected for their shape${dryRun ? "" : " (listed by `syncmirror problems`)"}; this run's sources do not advance`,
      ),
    );
  return errors;
}

function runError(
  where: Sighting,
  run: Pick<Run, "syncId" | "userEmail">,
  source: string | null,
  text: string,
): PassError {
  return {
    at: where.at,
    syncId: run.syncId,
    userEmail: run.userEmail,
    source,
    error: text,
    replica: where.replica,
  };
}

/** Why a source did not succeed, in the service's words when it gave some. */
function describeSource(
  s: Pick<RunSource, "taskStatus" | "exportStatus">,
  serviceError: string | null,
): string {
  const said = serviceError === null ? "" : `: ${serviceError}`;
  if (s.taskStatus === "FAILED") return `FAILED${said || " (the service gave no error text)"}`;
  if (s.taskStatus === "INCOMPLETE")
    return `INCOMPLETE${said || ": the agent stopped before finishing (out of iterations, or content left undecided)"}`;
  if (s.exportStatus === null) return `${s.taskStatus}, but the export does not list the source${said}`;
  return `export status ${s.exportStatus}${said}`;
}
