/**
 * Settling a trigger: skipped pairs recorded, the outcome decided, the trigger closed, the
 * mirror's status and gauges updated, and the summary `sync --json` prints built.
 */
import type { SkippedPair } from "../api/schemas.js";
import type { TriggerRow } from "../store/state.js";
import type { MirrorPass } from "./context.js";
import { type Outcome, sourceSucceeded } from "./outcome.js";
import type { MirrorSummary } from "./summary.js";

export function settle(
  pass: MirrorPass,
  triggerRowId: number,
  extra: { timedOut: boolean; resumed: boolean; startedAtMs: number; dryRun?: boolean },
): MirrorSummary {
  const { ctx, mirror } = pass;
  const { store } = ctx;
  const trigger = store.state.getTrigger(triggerRowId);
  const runs = store.state.runsOf(trigger.id);
  const skipped: SkippedPair[] = trigger.skipped === null ? [] : JSON.parse(trigger.skipped);
  const summary = emptySummary(mirror.name, trigger, extra.resumed);
  let allSourcesSucceeded = runs.length > 0;
  let anyRead = false;
  for (const run of runs) {
    summary.runs[run.status] = (summary.runs[run.status] ?? 0) + 1;
    summary.counts.upserted += run.upserted;
    summary.counts.unchanged += run.unchanged;
    summary.counts.rejected += run.rejected;
    if (run.ingest !== "done") {
      allSourcesSucceeded = false;
      if (run.error)
        summary.errors.push({ sync_id: run.syncId, user_email: run.userEmail, error: run.error });
      continue;
    }
    anyRead = true;
    for (const s of store.state.sourcesOf(run.syncId)) {
      const status = s.exportStatus ?? "unknown";
      summary.sources[status] = (summary.sources[status] ?? 0) + 1;
      if (!sourceSucceeded(run, s)) allSourcesSucceeded = false;
    }
  }
  for (const s of skipped) summary.skipped[s.reason] = (summary.skipped[s.reason] ?? 0) + 1;
  summary.skipped_total = trigger.adopted ? null : trigger.skippedCount;
  summary.counts.deleted = trigger.deleted;
  summary.counts.access_revoked = trigger.revoked;
  summary.counts.sweeps_held = trigger.sweepsHeld;
  summary.counts.held_revocations = trigger.held;

  const { outcome, message } = decide({
    anyRead,
    allSourcesSucceeded,
    timedOut: extra.timedOut,
    held: trigger.held,
    leaversUnknown: trigger.leaversUnknown,
    runs: runs.length,
  });
  summary.outcome = outcome;
  summary.message = message;
  const at = ctx.now();
  summary.duration_seconds = Math.max(0, (at.getTime() - extra.startedAtMs) / 1000);

  const firstSeen = runs
    .map((r) => r.createdAt)
    .filter((c): c is string => c !== null)
    .sort()[0];
  store.transaction(() => {
    if (firstSeen !== undefined) {
      for (const s of skipped) {
        store.pairs.skipped(
          { mirror: mirror.name, userEmail: s.user_email, serverInstanceId: s.server_instance_id },
          { reason: s.reason, authStatus: s.auth_status ?? null, seenAt: firstSeen },
        );
      }
    }
    store.state.finish(trigger.id, { outcome, message, summary, finishedAt: at.toISOString() });
    // A dry run changed nothing in the mirror: it is not the mirror's last outcome.
    if (!extra.dryRun) {
      store.state.recordOutcome(mirror.name, {
        mode: trigger.mode,
        outcome,
        message,
        at: at.toISOString(),
        ...(trigger.mode === "full" ? { heldRevocations: trigger.held } : {}),
      });
    }
  });
  summary.pairs_awaiting_baseline = store.pairs.countAwaitingBaseline(mirror.name);
  if (!extra.dryRun) recordMetrics(pass, summary, trigger.mode === "full" ? trigger.held : undefined);
  return summary;
}

function decide(s: {
  anyRead: boolean;
  allSourcesSucceeded: boolean;
  timedOut: boolean;
  held: number;
  leaversUnknown: boolean;
  runs: number;
}): { outcome: Outcome; message: string } {
  if (!s.anyRead) {
    return {
      outcome: "failed",
      message: s.timedOut
        ? "no run finished within run_timeout_minutes; raise it or check the runs upstream"
        : "no export could be read; see the errors and the log",
    };
  }
  const problems: string[] = [];
  if (!s.allSourcesSucceeded) problems.push("some sources did not succeed; their pairs keep their watermark");
  if (s.timedOut) problems.push("some runs did not finish within run_timeout_minutes");
  if (s.held > 0) {
    problems.push(
      `a sweep of ${s.held} revocations was held: check upstream, then run sync --full --allow-mass-delete`,
    );
  }
  if (s.leaversUnknown)
    problems.push("the access check failed: users who left keep their access until the next full pass");
  if (problems.length > 0) return { outcome: "partial", message: problems.join("; ") };
  return { outcome: "succeeded", message: `${s.runs} run(s) ingested` };
}

/** Closes an intent or trigger that could not proceed (refused, or failed for good). */
export function settleWithoutRuns(
  pass: MirrorPass,
  trigger: TriggerRow,
  r: { outcome: Outcome; message: string; keepInFlight: boolean; resumed: boolean; startedAtMs: number },
): MirrorSummary {
  const { ctx, mirror } = pass;
  const summary = emptySummary(mirror.name, trigger, r.resumed);
  summary.outcome = r.outcome;
  summary.message = r.message;
  const at = ctx.now();
  summary.duration_seconds = Math.max(0, (at.getTime() - r.startedAtMs) / 1000);
  ctx.store.transaction(() => {
    if (!r.keepInFlight) {
      ctx.store.state.finish(trigger.id, {
        outcome: r.outcome,
        message: r.message,
        summary,
        finishedAt: at.toISOString(),
      });
    }
    ctx.store.state.recordOutcome(mirror.name, {
      mode: trigger.mode,
      outcome: r.outcome,
      message: r.message,
      at: at.toISOString(),
    });
  });
  summary.pairs_awaiting_baseline = ctx.store.pairs.countAwaitingBaseline(mirror.name);
  recordMetrics(pass, summary, undefined);
  return summary;
}

function emptySummary(mirror: string, trigger: TriggerRow, resumed: boolean): MirrorSummary {
  return {
    mirror,
    mode: trigger.mode,
    trigger_id: trigger.triggerId,
    since: trigger.since,
    resumed,
    adopted: trigger.adopted,
    runs: {},
    sources: {},
    counts: {
      upserted: 0,
      unchanged: 0,
      rejected: 0,
      deleted: 0,
      access_revoked: 0,
      sweeps_held: 0,
      held_revocations: 0,
    },
    skipped: {},
    skipped_total: 0,
    pairs_awaiting_baseline: 0,
    errors: [],
    outcome: "failed",
    message: "",
    duration_seconds: 0,
  };
}

function recordMetrics({ ctx, mirror }: MirrorPass, summary: MirrorSummary, held: number | undefined): void {
  const m = ctx.metrics;
  const labels = { mirror: mirror.name };
  m.triggers.inc({ ...labels, mode: summary.mode, outcome: summary.outcome });
  m.syncDuration.observe({ ...labels, mode: summary.mode }, summary.duration_seconds);
  if (summary.outcome === "succeeded")
    m.lastSuccess.set({ ...labels, mode: summary.mode }, ctx.now().getTime() / 1000);
  m.resources.set(labels, ctx.store.access.countLive(mirror.name));
  m.pairsAwaitingBaseline.set(labels, summary.pairs_awaiting_baseline);
  if (held !== undefined) m.heldRevocations.set(labels, held);
}
