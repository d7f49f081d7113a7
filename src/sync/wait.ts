/**
 * Waiting for a trigger's runs (docs/reference/sync-semantics.md#one-trigger-per-mirror): one listing by
 * `trigger_id` per round (100 runs a request), backing off from poll_initial to poll_max, exporting
 * each run as soon as it finishes while the others keep running, and continuing INCOMPLETE
 * sources up to `continue_incomplete` times.
 */
import type { RunListItem, RunListSource } from "../api/schemas.js";
import { AbortedError, FeatureDisabledError, NotFoundError, UnauthorizedError } from "../errors.js";
import { isDatabaseError } from "../store/store.js";
import type { Run, Trigger } from "../store/types.js";
import type { MirrorPass, Progress } from "./context.js";
import { sendContinue, settlePendingContinue } from "./continue.js";
import { exportNotReady, waitAgain } from "./export-not-ready.js";
import { failRun } from "./fail-run.js";
import { ingestRun } from "./ingest.js";
import { isFinished, nextAction } from "./next-action.js";
import { serverTime } from "./time.js";

export interface WaitResult {
  timedOut: boolean;
}

const PROGRESS_EVERY_MS = 30_000;

/**
 * Reads one finished run's export (`ingestRun` for a real pass); `runSources` are its sources as the
 * run list shows them, when it does.
 */
export type RunReader = (
  pass: MirrorPass,
  trigger: Trigger,
  run: Run,
  runSources: readonly RunListSource[] | undefined,
) => Promise<void>;

export async function waitAndIngest(
  pass: MirrorPass,
  trigger: Trigger,
  read: RunReader = ingestRun,
): Promise<WaitResult> {
  const { ctx, mirror } = pass;
  const deadline = Date.parse(trigger.startedAt ?? trigger.intentAt) + mirror.runTimeoutMinutes * 60_000;
  const ingesting = new Map<string, Promise<void>>();
  // Runs whose export ended since the runs were last read. On PostgreSQL the runs are read beside
  // this process's transactions, so a read begun before an export ended may show the run as it was
  // before its last page committed: exporting it again would read the run twice.
  const endedSinceRead = new Set<string>();
  let fatal: unknown;
  let delayMs = mirror.pollInitialSeconds * 1000;
  let timedOut = false;
  let listed = new Map<string, RunListItem>();
  let listNow = true;
  /** A continue was sent or settled in a round that a stale read cut short: read every run next. */
  let readAllNext = false;
  let runs: Run[] = [];
  const readAll = () => {
    endedSinceRead.clear();
    return ctx.store.runs.ofTrigger(trigger.id);
  };
  // Between listings only an export ending changes a run (a round that sends a continue or abandons
  // runs reads them all again), so a wake re-reads just the runs whose export ended: reading every
  // run on each of a 500-run trigger's ~1,000 wakes cost more CPU than ingesting their rows.
  const refreshEnded = async (known: Run[]): Promise<Run[]> => {
    const ended = [...endedSinceRead];
    endedSinceRead.clear();
    const fresh = new Map<string, Run>();
    for (const syncId of ended) fresh.set(syncId, await ctx.store.runs.get(syncId));
    return known.map((r) => fresh.get(r.syncId) ?? r);
  };
  let timer: Promise<"timer"> | null = null;
  // The poll timer is cancelled when the wait ends: a pending timer would keep `syncmirror sync`
  // alive for up to poll_max_seconds after its work is done.
  const stopTimer = new AbortController();
  const onAbort = () => stopTimer.abort(ctx.signal.reason);
  ctx.signal.addEventListener("abort", onAbort, { once: true });
  // On its own clock: the loop may sleep up to poll_max_seconds, or wait on one long export. A pass
  // that is stopping (a lost lease, a shutdown) reports no progress: another process may own it now.
  const progressTicker = setInterval(() => {
    if (ctx.signal.aborted) return;
    ctx.store.runs.ofTrigger(trigger.id).then(
      (runs) => {
        if (!ctx.signal.aborted) ctx.log.info(progressOf(runs), "progress");
      },
      () => {},
    );
  }, PROGRESS_EVERY_MS);
  progressTicker.unref();
  try {
    for (;;) {
      if (listNow) {
        listed = await listTriggerRuns(pass, trigger);
        await markVanished(pass, trigger, listed);
      }
      const listedNow = listNow;
      runs = listedNow || readAllNext ? await readAll() : await refreshEnded(runs);
      readAllNext = false;
      // Set when the loop below awaited (a continue) or wrote: then `runs` is re-read before use.
      let changed = false;
      let stale = false;
      const beforeDeadline = ctx.now().getTime() <= deadline;
      for (const run of runs) {
        // A token or feature problem ends the pass: no export starts after one (a run whose export
        // met it is still waiting, and would be asked again).
        if (fatal !== undefined) break;
        // Between listings a run's status stays as listed, so the only new decision is an export
        // for a freed slot: once the slots are full the rest of a 500-run trigger can wait.
        if (!listedNow && ingesting.size >= ctx.ingestConcurrency) break;
        if (run.ingest === "done" || run.ingest === "failed") continue;
        const endedDuringRead = endedSinceRead.has(run.syncId);
        stale ||= endedDuringRead;
        const action = nextAction(run, {
          listed: listed.has(run.syncId),
          exporting: ingesting.has(run.syncId) || endedDuringRead,
          slotFree: ingesting.size < ctx.ingestConcurrency,
          continueIncomplete: mirror.continueIncomplete,
          beforeDeadline,
        });
        if (action === "settle-continue" || action === "continue") {
          await continueOrFail(
            pass,
            trigger,
            run,
            action === "continue" ? sendContinue : settlePendingContinue,
          );
          changed = true;
        }
        if (action !== "export") continue;
        const runSources = listed.get(run.syncId)?.sources;
        const job = readOrFail(pass, trigger, run, () => read(pass, trigger, run, runSources))
          .catch((error: unknown) => {
            fatal ??= error;
          })
          .finally(() => {
            ingesting.delete(run.syncId);
            endedSinceRead.add(run.syncId);
          });
        ingesting.set(run.syncId, job);
      }
      if (fatal !== undefined) {
        await Promise.allSettled(ingesting.values());
        throw fatal;
      }
      // Read the runs again at once: a run skipped above may still be open.
      if (stale) {
        listNow = false;
        readAllNext = changed;
        continue;
      }
      const now = ctx.now().getTime();
      if (now > deadline && (await abandonUnfinished(pass, trigger, ingesting))) {
        timedOut = true;
        changed = true;
      }
      // Starting an export writes nothing before its first page arrives over HTTP (ingest.ts
      // relies on the same: the page transaction comes after the fetch), so without a continue or
      // an abandonment the runs read above are still current (a 500-run trigger wakes ~1,000 times).
      if (changed) runs = await readAll();
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
  trigger: Trigger,
): Promise<Map<string, RunListItem>> {
  const listed = new Map<string, RunListItem>();
  for await (const item of ctx.api.listAllRuns({ trigger_id: trigger.triggerId as string }, ctx.signal)) {
    listed.set(item.sync_id, item);
  }
  // Issued at once, in this order (one round trip on PostgreSQL): no statement needs another's answer.
  await ctx.store.transaction((tx) =>
    Promise.all([
      tx.runs.insertMany(
        trigger.id,
        mirror.name,
        [...listed.values()].map((i) => ({
          syncId: i.sync_id,
          userEmail: i.user_email,
          status: i.status,
          createdAt: serverTime(i.created_at),
        })),
      ),
      ...[...listed.values()].map((i) => tx.runs.updateStatus(i.sync_id, i.status, serverTime(i.created_at))),
    ]),
  );
  return listed;
}

/**
 * Past run_timeout_minutes, runs still unfinished are given up on (their pairs do not advance);
 * runs that did finish are still exported. A run whose export stopped at a page that answered
 * "not finished" (409) is unfinished again and given up on too; one being exported is not.
 */
async function abandonUnfinished(
  { ctx, mirror }: MirrorPass,
  trigger: Trigger,
  exporting: ReadonlyMap<string, unknown>,
): Promise<boolean> {
  const abandoned = (await ctx.store.runs.ofTrigger(trigger.id)).filter(
    (r) =>
      (r.ingest === "waiting" || r.ingest === "ingesting") &&
      !isFinished(r.status) &&
      !exporting.has(r.syncId),
  );
  for (const r of abandoned) await failRun(ctx, trigger, r, "run_timeout_minutes reached");
  if (abandoned.length > 0) {
    ctx.log.error(
      { runs: abandoned.length, run_timeout_minutes: mirror.runTimeoutMinutes },
      "runs did not finish in time; giving up on them",
    );
  }
  return abandoned.length > 0;
}

/** A run that vanished upstream (404) before or during its continue fails alone, as below. */
async function continueOrFail(
  pass: MirrorPass,
  trigger: Trigger,
  run: Run,
  send: (pass: MirrorPass, run: Run) => Promise<void>,
): Promise<void> {
  try {
    await send(pass, run);
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
    await vanished(pass.ctx, trigger, run);
  }
}

/** A known run missing from the listing is read directly; a 404 means it vanished upstream. */
async function markVanished(
  { ctx }: MirrorPass,
  trigger: Trigger,
  listed: Map<string, RunListItem>,
): Promise<void> {
  for (const run of await ctx.store.runs.ofTrigger(trigger.id)) {
    if (listed.has(run.syncId) || run.ingest !== "waiting") continue;
    try {
      const detail = await ctx.api.getRun(run.syncId, ctx.signal);
      await ctx.store.runs.updateStatus(run.syncId, detail.status, serverTime(detail.created_at));
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      await vanished(ctx, trigger, run);
    }
  }
}

async function vanished(ctx: MirrorPass["ctx"], trigger: Trigger, run: Run): Promise<void> {
  await failRun(ctx, trigger, run, "the run no longer exists upstream (404)");
  ctx.log.error({ sync_id: run.syncId }, "run vanished upstream (404); its pairs do not advance this pass");
}

/**
 * A run whose export cannot be read (unsupported schema, 404, retries exhausted) fails alone: its
 * pairs do not advance and the pass is partial. An export not ready yet (409) waits again. Token
 * or feature problems stop the whole pass.
 */
async function readOrFail(
  pass: MirrorPass,
  trigger: Trigger,
  run: Run,
  read: () => Promise<void>,
): Promise<void> {
  const { ctx } = pass;
  try {
    await read();
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
    const unfinished = exportNotReady(error);
    if (unfinished !== undefined) return waitAgain(pass, run, unfinished);
    const message = error instanceof Error ? error.message : String(error);
    await failRun(ctx, trigger, run, message);
    // Counted here, as its last page's commit counts a run read whole (a dry run counts nothing).
    if (!trigger.dryRun && isFinished(run.status))
      ctx.metrics.runs.inc({ mirror: pass.mirror.name, status: run.status });
    ctx.log.error(
      { sync_id: run.syncId, err: message },
      "export of run could not be read; its pairs do not advance",
    );
  }
}

function progressOf(runs: Run[]): Omit<Progress, "mirror"> {
  return {
    runs: runs.length,
    finished: runs.filter((r) => isFinished(r.status)).length,
    ingested: runs.filter((r) => r.ingest === "done").length,
    resources: runs.reduce((n, r) => n + r.upserted + r.unchanged, 0),
  };
}
