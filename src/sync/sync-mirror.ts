/**
 * One pass of one mirror, in the order it happens: resume what is in flight, plan the `since`,
 * trigger (or adopt), wait and ingest, sweep (full), settle.
 */
import { isBaseUrlWrong } from "../api/base-url.js";
import { AbortedError, NotFoundError, SyncmirrorError } from "../errors.js";
import { withLogContext } from "../log.js";
import { isDatabaseError } from "../store/store.js";
import type { Pair, Trigger } from "../store/types.js";
import { classifyFailure, describeFailureCause } from "./classify.js";
import type { BoundMirror, MirrorPass, PassOptions, SyncContext } from "./context.js";
import { dryRunSweep } from "./dry-run.js";
import { passError } from "./fail-run.js";
import { fencedStore } from "./fence.js";
import { fullOwedBecause } from "./full-owed.js";
import { recordSkippedGauge } from "./gauges.js";
import { passErrorJson } from "./pass-error-json.js";
import { planPass } from "./plan.js";
import { settle, settleWithoutRuns } from "./settle.js";
import { type MirrorSummary, notStartedSummary } from "./summary.js";
import { sweep, sweepLeaversOfRefusedPass } from "./sweep.js";
import { establishTrigger, recordIntent } from "./trigger.js";
import { readTriggerRuns } from "./trigger-runs.js";
import { waitAndIngest } from "./wait.js";

/**
 * Runs one pass. A trigger already in flight for the mirror is resumed, never duplicated; with
 * `full`, an incremental in flight is finished first and then the full is triggered. Under a
 * lease (`ctx.lease`) every write of the pass is fenced by it.
 * Throws only AbortedError (shutdown, or LeaseLostError) and database errors (the trigger then
 * stays in flight, its outcome unsettled, for the next pass to resume); every upstream problem is
 * an outcome.
 */
export function syncMirror(
  mirror: BoundMirror,
  ctx: SyncContext,
  options: PassOptions,
): Promise<MirrorSummary> {
  const fenced = ctx.lease ? { ...ctx, store: fencedStore(ctx.store, ctx.lease) } : ctx;
  return withLogContext({ mirror: mirror.name }, () => resumeOrTrigger(mirror, fenced, options));
}

async function resumeOrTrigger(
  mirror: BoundMirror,
  ctx: SyncContext,
  options: PassOptions,
): Promise<MirrorSummary> {
  const { log } = ctx;
  const mirrorPass: MirrorPass = { mirror, ctx, options };
  // Issued at once (on PostgreSQL the reads go to the pool's other connections while the ensure
  // commits): none needs another's answer. The pairs and the newest run are for a new trigger,
  // read again after a trigger in flight was resumed, which changes them.
  const [state, record, inFlight, pairs, knownBefore] = await Promise.all([
    ctx.store.mirrors.ensure(mirror.name, mirror.syncConfigId),
    ctx.store.syncConfigs.find(mirror.name),
    ctx.store.triggers.findInFlight(mirror.name),
    ctx.store.pairs.listForMirror(mirror.name),
    ctx.store.runs.newestCreatedAt(mirror.name),
  ]);
  // A change of the sync config (its settings, docs/declared-sync-configs.md, or which one
  // `sync_config_id` names) is swept by the next full snapshot, whatever scheduled this pass.
  const owed = fullOwedBecause(state, record);
  const full = options.full || owed !== null;
  if (owed && !options.full) log.info(`${owed} since the last full pass: this pass is full`);
  if (inFlight && options.dryRun && !inFlight.dryRun) {
    // Finishing a real pass ingests and sweeps: the very thing a dry run is asked not to do.
    const message = `${inFlight.mode === "full" ? "a" : "an"} ${inFlight.mode} pass is in flight${inFlight.triggerId ? ` (trigger ${inFlight.triggerId})` : ""} and a dry run writes nothing, so it does not finish it: run \`syncmirror sync\` to finish it (the daemon does on its own), then the dry run again`;
    log.warn({ trigger_id: inFlight.triggerId, mode: inFlight.mode }, message);
    return notStartedSummary(mirror.name, "full", passErrorJson(passError(ctx, message)));
  }
  if (inFlight && state.fullPendingAfter !== null && inFlight.id <= state.fullPendingAfter) {
    const abandoned = await abandon(mirrorPass, inFlight);
    const summary = await trigger(mirrorPass, true, {
      pairs: await ctx.store.pairs.listForMirror(mirror.name),
      knownBefore: await ctx.store.runs.newestCreatedAt(mirror.name),
    });
    return withFinishedFirst(summary, abandoned);
  }
  if (inFlight) {
    log.info({ trigger_id: inFlight.triggerId, mode: inFlight.mode }, "resuming the trigger left in flight");
    if (options.allowMassDelete && inFlight.mode === "full")
      await ctx.store.triggers.setMassDeleteAllowed(inFlight.id, true);
    const resumed = await drive(mirrorPass, inFlight, true);
    const stillInFlight = (await ctx.store.triggers.findInFlight(mirror.name)) !== undefined;
    // A dry run left in flight was finished as one (it wrote nothing): only another dry run is served by it.
    const served = inFlight.dryRun ? options.dryRun : !full || inFlight.mode === "full";
    if (served || stillInFlight || options.resumeOnly) return resumed;
    const summary = await trigger(mirrorPass, full, {
      pairs: await ctx.store.pairs.listForMirror(mirror.name),
      knownBefore: await ctx.store.runs.newestCreatedAt(mirror.name),
    });
    return withFinishedFirst(summary, resumed);
  }
  return trigger(mirrorPass, full, { pairs, knownBefore });
}

/** A pass's summary naming the trigger left in flight that it finished first. */
export function withFinishedFirst(summary: MirrorSummary, resumed: MirrorSummary): MirrorSummary {
  const { mode, trigger_id, outcome, message } = resumed;
  return { ...summary, finished_first: { mode, trigger_id, outcome, message } };
}

/**
 * A trigger left in flight by a pass of the config `sync_config_id` named before: its runs are
 * that config's, its `since` comes from that config's runs, and the run list that would adopt a
 * lost POST's runs is the new config's. Settled as failed without a read; nothing it ingested is
 * swept, and the full this change owes collects what the new config sees.
 */
async function abandon(pass: MirrorPass, inFlight: Trigger): Promise<MirrorSummary> {
  const { ctx, mirror } = pass;
  const message = `sync_config_id changed to ${mirror.syncConfigId} while this ${inFlight.mode} pass${inFlight.triggerId ? ` (trigger ${inFlight.triggerId})` : ""} of the config named before was in flight: abandoned, its runs not read; a full pass of the new config follows`;
  ctx.log.warn({ trigger_id: inFlight.triggerId, mode: inFlight.mode }, message);
  return settleWithoutRuns(pass, inFlight, {
    outcome: "failed",
    message,
    keepInFlight: false,
    resumed: true,
    startedAtMs: ctx.now().getTime(),
  });
}

/** A new trigger: its intent recorded, then driven. */
async function trigger(
  mirrorPass: MirrorPass,
  full: boolean,
  read: { pairs: Pair[]; knownBefore: string | null },
): Promise<MirrorSummary> {
  const { ctx, mirror } = mirrorPass;
  const plan = planPass(read.pairs, mirror, full);
  // No transaction (two round trips on PostgreSQL) when no pair went stale; the marks go out at once.
  if (plan.stale.length > 0) {
    await ctx.store.transaction(async (tx) => {
      await Promise.all(plan.stale.map((p) => tx.pairs.markAwaitingBaseline(p)));
    });
  }
  return drive(mirrorPass, await recordIntent(mirrorPass, plan, read.knownBefore), false);
}

async function drive(pass: MirrorPass, row: Trigger, resumed: boolean): Promise<MirrorSummary> {
  const { ctx, mirror } = pass;
  const startedAtMs = ctx.now().getTime();
  let trigger = row;
  try {
    if (trigger.state === "intent") trigger = await establishTrigger(pass, trigger, resumed);
    const active = trigger;
    if (active.skipped !== null) recordSkippedGauge(ctx.metrics, mirror.name, active);
    return await withLogContext({ trigger_id: active.triggerId }, async () => {
      // Its trigger, not this pass's options, makes a dry run: one cut short (a stop, a rejected
      // token) and resumed by a real pass is read as a dry run still, never swept as if ingested.
      if (active.dryRun) return dryRunSweep(pass, active, { startedAtMs, resumed });
      const { timedOut } = await waitAndIngest(pass, active);
      // Read at once: PostgreSQL answers them on several connections together.
      const [current, read] = await Promise.all([
        ctx.store.triggers.get(active.id),
        readTriggerRuns(ctx.store, active.id),
      ]);
      await sweep(pass, current, read);
      // A full pass's sweep counted into the trigger: settle reads it again.
      const summary = await settle(pass, active.id, read, {
        timedOut,
        resumed,
        startedAtMs,
        ...(current.mode === "full" ? {} : { trigger: current }),
      });
      ctx.log.info({ outcome: summary.outcome, counts: summary.counts }, summary.message);
      return summary;
    });
  } catch (error) {
    // The database failing says nothing of the upstream run: nothing is settled, nothing written.
    if (error instanceof AbortedError || ctx.signal.aborted || isDatabaseError(error)) throw error;
    if (!(error instanceof SyncmirrorError)) throw error;
    const baseUrlWrong =
      trigger.state === "intent" &&
      error instanceof NotFoundError &&
      (await isBaseUrlWrong(ctx.api, ctx.signal));
    const { outcome, keepInFlight, message, declaredGone } = classifyFailure(
      error,
      mirror,
      trigger,
      baseUrlWrong,
    );
    const err = describeFailureCause(error, baseUrlWrong);
    ctx.log.error({ code: error.code, err, trigger_id: trigger.triggerId }, message);
    // Recorded as the declaration's error: a problem to see, and what makes a daemon that manages
    // the declarations apply it (create the config again) before the next pass.
    if (declaredGone)
      await ctx.store.syncConfigs.recordError(mirror.name, {
        error: message,
        at: ctx.now().toISOString(),
        createRefused: false,
      });
    // Refused before any run: no snapshot, but users who left still lose their access.
    if (outcome === "refused" && trigger.state === "intent" && trigger.mode === "full" && !trigger.dryRun) {
      await sweepLeaversOfRefusedPass(pass, trigger);
      trigger = await ctx.store.triggers.get(trigger.id);
    }
    return settleWithoutRuns(pass, trigger, { outcome, message, keepInFlight, resumed, startedAtMs });
  }
}
