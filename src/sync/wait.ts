/**
 * Waiting for a trigger's runs (SPEC "A run is exported as soon as it finishes"): one listing by
 * `trigger_id` per round (100 runs a request), backing off from poll_initial to poll_max, exporting
 * each run as soon as it finishes while the others keep running, and continuing INCOMPLETE
 * sources up to `continue_incomplete` times.
 */
import { FINISHED_RUN_STATUSES, type RunListItem, type RunStatus } from "../api/schemas.js";
import { AbortedError, FeatureDisabledError, NotFoundError, UnauthorizedError } from "../errors.js";
import { isDatabaseError } from "../store/db.js";
import type { RunRow, TriggerRow } from "../store/state.js";
import type { MirrorPass, Progress } from "./context.js";
import { sendContinue, settlePendingContinue } from "./continue.js";
import { ingestRun } from "./ingest.js";
import { serverTime } from "./time.js";

export interface WaitResult {
  timedOut: boolean;
}

const PROGRESS_EVERY_MS = 30_000;

/** Reads one finished run's export; `ingestRun` for a real pass. */
export type RunReader = (pass: MirrorPass, trigger: TriggerRow, run: RunRow) => Promise<void>;

export async function waitAndIngest(
  pass: MirrorPass,
  trigger: TriggerRow,
  read: RunReader = ingestRun,
): Promise<WaitResult> {
  const { ctx, mirror } = pass;
  const deadline = Date.parse(trigger.startedAt ?? trigger.intentAt) + mirror.runTimeoutMinutes * 60_000;
  const ingesting = new Map<string, Promise<void>>();
  let fatal: unknown;
  let delayMs = mirror.pollInitialSeconds * 1000;
  let timedOut = false;
  let listed = new Map<string, RunListItem>();
  let listNow = true;
  let timer: Promise<"timer"> | null = null;
  // The poll timer is cancelled when the wait ends: a pending timer would keep `syncmirror sync`
  // alive for up to poll_max_seconds after its work is done.
  const stopTimer = new AbortController();
  const onAbort = () => stopTimer.abort(ctx.signal.reason);
  ctx.signal.addEventListener("abort", onAbort, { once: true });
  // On its own clock: the loop may sleep up to poll_max_seconds, or wait on one long export.
  const progressTicker = setInterval(
    () => ctx.log.info(progressOf(ctx.store.state.runsOf(trigger.id)), "progress"),
    PROGRESS_EVERY_MS,
  );
  progressTicker.unref();
  try {
    for (;;) {
      if (listNow) {
        listed = await listTriggerRuns(pass, trigger);
        await markVanished(pass, trigger, listed);
      }
      let runs = ctx.store.state.runsOf(trigger.id);
      // Set when the loop below awaited (a continue) or wrote: then `runs` is re-read before use.
      let changed = false;
      for (const run of runs) {
        if (
          !isFinished(run.status) ||
          !["waiting", "ingesting"].includes(run.ingest) ||
          ingesting.has(run.syncId)
        )
          continue;
        const item = listed.get(run.syncId);
        if (run.status === "incomplete" && run.continuePending !== null && item) {
          await settlePendingContinue(pass, run);
          changed = true;
          continue;
        }
        const mayContinue = run.continuesSent < mirror.continueIncomplete && ctx.now().getTime() <= deadline;
        if (run.status === "incomplete" && mayContinue && item) {
          await sendContinue(pass, run);
          changed = true;
          continue;
        }
        if (ingesting.size >= ctx.ingestConcurrency) continue;
        const job = readOrFail(pass, trigger, run, read)
          .catch((error: unknown) => {
            fatal ??= error;
          })
          .finally(() => ingesting.delete(run.syncId));
        ingesting.set(run.syncId, job);
      }
      if (fatal !== undefined) {
        await Promise.allSettled(ingesting.values());
        throw fatal;
      }
      const now = ctx.now().getTime();
      if (now > deadline && abandonUnfinished(pass, trigger)) {
        timedOut = true;
        changed = true;
      }
      // Starting an export writes nothing before its first await, so without a continue or an
      // abandonment the runs read above are still current (a 500-run trigger wakes ~1,000 times).
      if (changed) runs = ctx.store.state.runsOf(trigger.id);
      const open = runs.filter((r) => r.ingest === "waiting" || r.ingest === "ingesting");
      if (open.length === 0 && ingesting.size === 0) return { timedOut };
      const progress = progressOf(runs);
      ctx.onProgress?.({ mirror: pass.mirror.name, ...progress });
      // An export finishing wakes the loop to start the next finished run at once; only the poll
      // timer lists the runs again, so a round costs ceil(runs / 100) list calls however many finish.
      timer ??= ctx
        .sleep(delayMs, stopTimer.signal)
        .catch(() => {})
        .then(() => "timer" as const);
      const woke = await Promise.race([
        timer,
        ...[...ingesting.values()].map((p) => p.then(() => "ingest" as const)),
      ]);
      if (ctx.signal.aborted) {
        await Promise.allSettled(ingesting.values());
        throw new AbortedError("sync stopped by shutdown; the trigger will be resumed on the next start");
      }
      listNow = woke === "timer";
      if (listNow) {
        timer = null;
        delayMs = Math.min(delayMs * 2, mirror.pollMaxSeconds * 1000);
      }
    }
  } finally {
    clearInterval(progressTicker);
    ctx.signal.removeEventListener("abort", onAbort);
    stopTimer.abort();
  }
}

/** All the trigger's runs, 100 per request; new ones (adopted triggers) are recorded. */
async function listTriggerRuns(
  { ctx, mirror }: MirrorPass,
  trigger: TriggerRow,
): Promise<Map<string, RunListItem>> {
  const listed = new Map<string, RunListItem>();
  for await (const item of ctx.api.listAllRuns({ trigger_id: trigger.triggerId as string }, ctx.signal)) {
    listed.set(item.sync_id, item);
  }
  ctx.store.transaction(() => {
    ctx.store.state.insertRuns(
      trigger.id,
      mirror.name,
      [...listed.values()].map((i) => ({
        syncId: i.sync_id,
        userEmail: i.user_email,
        status: i.status,
        createdAt: serverTime(i.created_at),
      })),
    );
    for (const i of listed.values())
      ctx.store.state.updateRunStatus(i.sync_id, i.status, serverTime(i.created_at));
  });
  return listed;
}

/**
 * Past run_timeout_minutes, runs still unfinished are given up on (their pairs do not advance);
 * runs that did finish are still exported.
 */
function abandonUnfinished({ ctx, mirror }: MirrorPass, trigger: TriggerRow): boolean {
  const abandoned = ctx.store.state
    .runsOf(trigger.id)
    .filter((r) => r.ingest === "waiting" && !isFinished(r.status));
  for (const r of abandoned) ctx.store.state.setIngest(r.syncId, "failed", "run_timeout_minutes reached");
  if (abandoned.length > 0) {
    ctx.log.error(
      { runs: abandoned.length, run_timeout_minutes: mirror.runTimeoutMinutes },
      "runs did not finish in time; giving up on them",
    );
  }
  return abandoned.length > 0;
}

/** A known run missing from the listing is read directly; a 404 means it vanished upstream. */
async function markVanished(
  { ctx }: MirrorPass,
  trigger: TriggerRow,
  listed: Map<string, RunListItem>,
): Promise<void> {
  for (const run of ctx.store.state.runsOf(trigger.id)) {
    if (listed.has(run.syncId) || run.ingest !== "waiting") continue;
    try {
      const detail = await ctx.api.getRun(run.syncId, ctx.signal);
      ctx.store.state.updateRunStatus(run.syncId, detail.status, serverTime(detail.created_at));
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      ctx.store.state.setIngest(run.syncId, "failed", "the run no longer exists upstream (404)");
      ctx.log.error(
        { sync_id: run.syncId },
        "run vanished upstream (404); its pairs do not advance this pass",
      );
    }
  }
}

/**
 * A run whose export cannot be read (unsupported schema, 404, retries exhausted) fails alone: its
 * pairs do not advance and the pass is partial. Token or feature problems stop the whole pass.
 */
async function readOrFail(
  pass: MirrorPass,
  trigger: TriggerRow,
  run: RunRow,
  read: RunReader,
): Promise<void> {
  const { ctx } = pass;
  try {
    await read(pass, trigger, run);
  } catch (error) {
    // A local database error (disk full, read-only) says nothing about the export: the pass stops
    // with the trigger in flight, and the next one resumes from the last committed page.
    if (
      error instanceof AbortedError ||
      error instanceof UnauthorizedError ||
      error instanceof FeatureDisabledError ||
      isDatabaseError(error) ||
      ctx.signal.aborted
    ) {
      throw error;
    }
    const message = error instanceof Error ? error.message : String(error);
    ctx.store.state.setIngest(run.syncId, "failed", message);
    ctx.log.error(
      { sync_id: run.syncId, err: message },
      "export of run could not be read; its pairs do not advance",
    );
  }
}

function isFinished(status: string): boolean {
  return FINISHED_RUN_STATUSES.has(status as RunStatus);
}

function progressOf(runs: RunRow[]): Omit<Progress, "mirror"> {
  return {
    runs: runs.length,
    finished: runs.filter((r) => isFinished(r.status)).length,
    ingested: runs.filter((r) => r.ingest === "done").length,
    resources: runs.reduce((n, r) => n + r.upserted + r.unchanged, 0),
  };
}
