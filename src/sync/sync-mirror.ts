/**
 * One pass of one mirror, in the order it happens: resume what is in flight, plan the `since`,
 * trigger (or adopt), wait and ingest, sweep (full), settle.
 */
import type { MirrorConfig } from "../config.js";
import {
  AbortedError,
  BadRequestError,
  CannotStartError,
  FeatureDisabledError,
  NotFoundError,
  SyncmirrorError,
  UnauthorizedError,
} from "../errors.js";
import { withLogContext } from "../log.js";
import type { Metrics } from "../metrics.js";
import type { TriggerRow } from "../store/state.js";
import type { MirrorPass, PassOptions, SyncContext } from "./context.js";
import { dryRunSweep } from "./dry-run.js";
import type { Outcome } from "./outcome.js";
import { planPass } from "./plan.js";
import { settle, settleWithoutRuns } from "./settle.js";
import type { MirrorSummary } from "./summary.js";
import { sweep } from "./sweep.js";
import { establishTrigger, recordIntent } from "./trigger.js";
import { waitAndIngest } from "./wait.js";

const KNOWN_SKIP_REASONS = ["not_a_project_user", "not_syncable", "not_accessible"];

/**
 * Runs one pass. A trigger already in flight for the mirror is resumed, never duplicated; with
 * `full`, an incremental in flight is finished first and then the full is triggered.
 * Throws only AbortedError (shutdown) and database errors; every upstream problem is an outcome.
 */
export function syncMirror(
  mirror: MirrorConfig,
  ctx: SyncContext,
  options: PassOptions,
): Promise<MirrorSummary> {
  return withLogContext({ mirror: mirror.name }, () => pass(mirror, ctx, options));
}

async function pass(mirror: MirrorConfig, ctx: SyncContext, options: PassOptions): Promise<MirrorSummary> {
  const log = ctx.log.child({ mirror: mirror.name });
  const mirrorPass: MirrorPass = { mirror, ctx: { ...ctx, log }, options };
  ctx.store.state.ensureMirror(mirror.name, mirror.syncConfigId);
  const inFlight = ctx.store.state.findInFlight(mirror.name);
  if (inFlight) {
    log.info({ trigger_id: inFlight.triggerId, mode: inFlight.mode }, "resuming the trigger left in flight");
    if (options.allowMassDelete && inFlight.mode === "full")
      ctx.store.state.setMassDeleteAllowed(inFlight.id, true);
    const resumed = await drive(mirrorPass, inFlight, true);
    const stillInFlight = ctx.store.state.findInFlight(mirror.name) !== undefined;
    if (!options.full || inFlight.mode === "full" || stillInFlight) return resumed;
  }
  const plan = planPass(ctx.store.pairs.listForMirror(mirror.name), mirror, options.full);
  ctx.store.transaction(() => {
    for (const p of plan.stale) ctx.store.pairs.markAwaitingBaseline(p);
  });
  return drive(mirrorPass, recordIntent(mirrorPass, plan), false);
}

async function drive(pass: MirrorPass, row: TriggerRow, resumed: boolean): Promise<MirrorSummary> {
  const { ctx, mirror, options } = pass;
  const startedAtMs = ctx.now().getTime();
  let trigger = row;
  try {
    if (trigger.state === "intent") trigger = await establishTrigger(pass, trigger, resumed);
    const active = trigger;
    const log = ctx.log.child({ trigger_id: active.triggerId });
    const scoped: MirrorPass = { ...pass, ctx: { ...ctx, log } };
    recordSkippedGauge(ctx.metrics, mirror.name, active);
    return await withLogContext({ trigger_id: active.triggerId }, async () => {
      if (options.dryRun && active.mode === "full" && !resumed)
        return dryRunSweep(scoped, active, startedAtMs);
      const { timedOut } = await waitAndIngest(scoped, active);
      await sweep(scoped, ctx.store.state.getTrigger(active.id));
      const summary = settle(scoped, active.id, { timedOut, resumed, startedAtMs });
      log.info({ outcome: summary.outcome, counts: summary.counts }, summary.message);
      return summary;
    });
  } catch (error) {
    if (error instanceof AbortedError || ctx.signal.aborted) throw error;
    if (!(error instanceof SyncmirrorError)) throw error;
    const { outcome, keepInFlight, message } = classify(error, mirror, trigger);
    ctx.log.error({ code: error.code, err: error.message, trigger_id: trigger.triggerId }, message);
    return settleWithoutRuns(pass, trigger, { outcome, message, keepInFlight, resumed, startedAtMs });
  }
}

/**
 * Refusals close the trigger; anything that may pass (network, token, 5xx, a lost POST) keeps it
 * in flight, so the next pass resumes or adopts it instead of triggering again.
 */
function classify(
  error: SyncmirrorError,
  mirror: MirrorConfig,
  trigger: TriggerRow,
): { outcome: Outcome; keepInFlight: boolean; message: string } {
  const beforeRuns = trigger.state === "intent";
  if (error instanceof FeatureDisabledError) {
    return { outcome: "refused", keepInFlight: !beforeRuns, message: error.message };
  }
  if (beforeRuns && (error instanceof CannotStartError || error instanceof BadRequestError)) {
    return { outcome: "refused", keepInFlight: false, message: `trigger refused: ${error.message}` };
  }
  if (beforeRuns && error instanceof NotFoundError) {
    return {
      outcome: "failed",
      keepInFlight: false,
      message: `sync config ${mirror.syncConfigId} was not found upstream: check mirrors[].sync_config_id for ${mirror.name}`,
    };
  }
  if (error instanceof UnauthorizedError) {
    return { outcome: "failed", keepInFlight: true, message: error.message };
  }
  return {
    outcome: "failed",
    keepInFlight: true,
    message: `${error.message}; the trigger stays in flight and the next pass resumes it`,
  };
}

/** `syncmirror_skipped_pairs` from a trigger's skipped list (also restored by the daemon at start). */
export function recordSkippedGauge(metrics: Metrics, mirror: string, trigger: TriggerRow | undefined): void {
  const counts = new Map(KNOWN_SKIP_REASONS.map((r) => [r, 0]));
  const skipped: { reason: string }[] = trigger?.skipped ? JSON.parse(trigger.skipped) : [];
  for (const s of skipped) counts.set(s.reason, (counts.get(s.reason) ?? 0) + 1);
  for (const [reason, n] of counts) metrics.skippedPairs.set({ mirror, reason }, n);
}
