/**
 * Settling a trigger: skipped pairs recorded, the outcome decided, the trigger closed, the
 * mirror's status and gauges updated, and the summary `sync --json` prints built.
 */

import type { StoreOps } from "../store/store.js";
import type { Pair, PairRef, Run, Trigger } from "../store/types.js";
import type { MirrorPass } from "./context.js";
import { decideOutcome } from "./decide-outcome.js";
import { passError } from "./fail-run.js";
import { refreshMirrorGauges } from "./gauges.js";
import { decideLeavers, type LeavingPair, problemsEndedBy, skippedListComplete } from "./leavers.js";
import { type Outcome, sourceSucceeded } from "./outcome.js";
import { passErrorJson } from "./pass-error-json.js";
import { newlyStalePairs } from "./plan.js";
import { recordSkippedPairs } from "./skipped-problems.js";
import { type DryRunReport, emptySummary, type MirrorSummary } from "./summary.js";
import { firstRunCreatedAt, runFacts, sourcesOfRun, type TriggerRuns } from "./trigger-runs.js";

export async function settle(
  pass: MirrorPass,
  triggerRowId: number,
  read: TriggerRuns,
  extra: {
    timedOut: boolean;
    resumed: boolean;
    startedAtMs: number;
    /** A dry run's report: the pass wrote nothing, and says what its sweep would have done. */
    dryRun?: DryRunReport;
    /** The trigger as it stands, when the caller read it after the pass's last write to it. */
    trigger?: Trigger;
  },
): Promise<MirrorSummary> {
  const { ctx, mirror } = pass;
  const { store } = ctx;
  const { runs } = read;
  /** The (user, server) pairs whose pages the runs read, for the key count. */
  const pairsRead = new Map<string, PairRef>();
  for (const run of runs) {
    // Saved with a run's first page: a run that wrote anything has them.
    for (const s of sourcesOfRun(read, run)) {
      const pair = { mirror: mirror.name, userEmail: run.userEmail, serverInstanceId: s.serverInstanceId };
      pairsRead.set(`${pair.userEmail}\n${pair.serverInstanceId}`, pair);
    }
  }
  const firstSeen = firstRunCreatedAt(read);
  // Read at once: PostgreSQL answers them on two connections together.
  const [trigger, keys, pairs, errors] = await Promise.all([
    extra.trigger ?? store.triggers.get(triggerRowId),
    countKeys(pass, runs, [...pairsRead.values()], firstSeen),
    extra.dryRun ? [] : store.pairs.listForMirror(mirror.name),
    // Each was written with what it concerns (a page, a run given up on, an attempt): all are in.
    store.history.errors(triggerRowId),
  ]);
  // The pass moved watermarks: pairs it left too far behind await a baseline from now on.
  const newlyStale = newlyStalePairs(pairs, mirror);
  const gone = extra.dryRun ? [] : goneFromTrigger(pass, trigger, read, pairs);
  const skipped = trigger.skipped ?? [];
  const summary = summaryOf(mirror.name, trigger, extra.resumed);
  summary.errors = errors.map(passErrorJson);
  let allSourcesSucceeded = runs.length > 0;
  let anyRead = false;
  const ingest = { rows: 0, runsWritten: 0, runsUnread: 0 };
  for (const run of runs) {
    summary.runs[run.status] = (summary.runs[run.status] ?? 0) + 1;
    summary.counts.upserted += run.upserted;
    summary.counts.unchanged += run.unchanged;
    summary.counts.rejected += run.rejected;
    const rows = run.upserted + run.unchanged + run.rejected;
    ingest.rows += rows;
    if (rows > 0) ingest.runsWritten++;
    if (run.ingest !== "done") {
      ingest.runsUnread++;
      allSourcesSucceeded = false;
      continue;
    }
    anyRead = true;
    for (const s of sourcesOfRun(read, run)) {
      const status = s.exportStatus ?? "unknown";
      summary.sources[status] = (summary.sources[status] ?? 0) + 1;
      if (!sourceSucceeded(run, s)) allSourcesSucceeded = false;
    }
  }
  summary.keys = keys;
  for (const s of skipped) summary.skipped[s.reason] = (summary.skipped[s.reason] ?? 0) + 1;
  summary.skipped_total = trigger.skipped === null ? null : trigger.skippedCount;
  summary.counts.deleted = trigger.deleted;
  summary.counts.access_revoked = trigger.revoked;
  summary.counts.sweeps_held = trigger.sweepsHeld;
  summary.counts.held_revocations = trigger.held;

  const { outcome, message } = decideOutcome({
    anyRead,
    ingest,
    allSourcesSucceeded,
    timedOut: extra.timedOut,
    // A dry run's outcome is the real pass's: the sweeps the guard would hold.
    sweepsHeld: extra.dryRun ? extra.dryRun.held_sweeps.length : trigger.sweepsHeld,
    leaversUnknown: trigger.leaversUnknown,
    runs: runs.length,
    lastRunError: errors.findLast((e) => e.syncId !== null)?.error,
  });
  summary.outcome = outcome;
  summary.message = message;
  if (extra.dryRun) {
    summary.dry_run = extra.dryRun;
    const real = outcome === "succeeded" ? "" : `; the real pass would be ${outcome}: ${message}`;
    summary.message = `dry run: the sweep would revoke ${extra.dryRun.would_revoke} access row(s) and delete ${extra.dryRun.would_delete} resource(s)${real}; nothing was written`;
  }
  const at = ctx.now();
  summary.duration_seconds = Math.max(0, (at.getTime() - extra.startedAtMs) / 1000);

  await closeTrigger(pass, trigger, summary, {
    at,
    keepInFlight: false,
    dryRun: extra.dryRun !== undefined,
    heldRevocations: trigger.mode === "full" ? trigger.held : undefined,
    record: async (tx) => {
      const skips =
        firstSeen === undefined
          ? []
          : skipped.map((s) =>
              tx.pairs.skipped(
                { mirror: mirror.name, userEmail: s.user_email, serverInstanceId: s.server_instance_id },
                { reason: s.reason, authStatus: s.auth_status ?? null, seenAt: firstSeen },
              ),
            );
      await Promise.all([
        ...newlyStale.map((p) => tx.pairs.markAwaitingBaseline(p)),
        ...gone.map((g) => tx.pairs.retire(g.pair, g.reason, at.toISOString())),
        // Nothing of a retired pair runs again to clear its problems, and the full snapshot sweeps
        // only pairs holding access: they end here, but a held sweep, which holds access, ends there.
        ...gone.map((g) =>
          tx.problems.clearPair(
            g.pair,
            problemsEndedBy(g.reason).filter((kind) => kind !== "held_sweep"),
          ),
        ),
        ...skips,
        firstSeen === undefined ? undefined : recordSkippedPairs(tx, pass, trigger, at.toISOString()),
      ]);
    },
  });
  for (const { pair, reason } of gone)
    ctx.log.info(
      { user_email: pair.userEmail, server_instance_id: pair.serverInstanceId, reason },
      "pair retired: gone from the trigger, it no longer holds `since` back; it keeps its access until the next full snapshot",
    );
  return summary;
}

/**
 * Pairs an incremental's trigger shows gone without skipping them: their user is in none of its
 * runs (left the project, or dropped from the sync config's users) or ran without their server
 * (removed from the sync config). Retired now, they stop holding `since` back; their access is
 * revoked at the next full snapshot, as every leaver's. Only a complete skipped list says who is
 * absent (`leavers.ts`); a user it lists as having left is left to `plan.ts`, and stays reported.
 */
function goneFromTrigger(
  { mirror }: MirrorPass,
  trigger: Trigger,
  read: TriggerRuns,
  pairs: readonly Pair[],
): LeavingPair[] {
  if (trigger.mode !== "incremental" || !skippedListComplete(trigger.skipped, trigger.skippedCount))
    return [];
  const skippedUsers = new Set((trigger.skipped ?? []).map((s) => s.user_email));
  const inPlay = new Set(
    pairs.filter((p) => p.retiredAt === null).map((p) => `${p.userEmail}\n${p.serverInstanceId}`),
  );
  return decideLeavers({
    mirror: mirror.name,
    holding: [],
    skipped: trigger.skipped,
    skippedCount: trigger.skippedCount,
    checked: null,
    runs: runFacts(read),
    pairs,
    graceHours: mirror.inaccessibleGraceHours,
  }).filter(
    ({ pair, reason }) =>
      reason !== "inaccessible" &&
      !skippedUsers.has(pair.userEmail) &&
      inPlay.has(`${pair.userEmail}\n${pair.serverInstanceId}`),
  );
}

/**
 * Keys, not rows: an export lists a key once per user who can see it. The runs count the keys
 * they wrote first in the pass, in the page transactions (so a resumed pass counts all of it); the
 * rest of the keys the pass saw are the access rows its runs refreshed. Nothing per key is held in
 * memory: a pass over a million keys would not fit the container's heap.
 */
async function countKeys(
  { ctx }: MirrorPass,
  runs: readonly Run[],
  pairs: readonly PairRef[],
  firstSeen: string | undefined,
): Promise<MirrorSummary["keys"]> {
  const keys = { new: 0, changed: 0, unchanged: 0 };
  for (const run of runs) {
    keys.new += run.keysNew;
    keys.changed += run.keysChanged;
  }
  if (firstSeen === undefined || pairs.length === 0) return keys;
  const seen = await ctx.store.access.countKeysSeenSince(pairs, firstSeen);
  keys.unchanged = Math.max(0, seen - keys.new - keys.changed);
  return keys;
}

/** The summary the history keeps: a dry run's without its lists of keys, which can be long. */
function kept(summary: MirrorSummary): MirrorSummary {
  if (summary.dry_run === undefined) return summary;
  return { ...summary, dry_run: { ...summary.dry_run, revoke: [], delete: [] } };
}

/** Closes an intent or trigger that could not proceed (refused, or failed for good). */
export async function settleWithoutRuns(
  pass: MirrorPass,
  trigger: Trigger,
  r: { outcome: Outcome; message: string; keepInFlight: boolean; resumed: boolean; startedAtMs: number },
): Promise<MirrorSummary> {
  const { ctx, mirror } = pass;
  const summary = summaryOf(mirror.name, trigger, r.resumed);
  summary.outcome = r.outcome;
  summary.message = r.message;
  // A refused full pass still takes the access of users who left (sweep.ts).
  summary.counts.deleted = trigger.deleted;
  summary.counts.access_revoked = trigger.revoked;
  const at = ctx.now();
  summary.duration_seconds = Math.max(0, (at.getTime() - r.startedAtMs) / 1000);
  // Kept with the trigger, so a trigger resumed after several failed attempts shows each of them.
  const attempt = passError(ctx, r.message, undefined, at);
  summary.errors = [...(await ctx.store.history.errors(trigger.id)), attempt].map(passErrorJson);
  await closeTrigger(pass, trigger, summary, {
    at,
    keepInFlight: r.keepInFlight,
    dryRun: false,
    record: (tx) => tx.history.addErrors(trigger.id, [attempt]),
  });
  return summary;
}

/** The summary of a pass over `trigger`, nothing counted yet. */
function summaryOf(mirror: string, trigger: Trigger, resumed: boolean): MirrorSummary {
  return {
    ...emptySummary(mirror, trigger.mode),
    trigger_id: trigger.triggerId,
    since: trigger.since,
    resumed,
    adopted: trigger.adopted,
  };
}

/**
 * The one close of a pass: the trigger finished (unless it stays in flight to be resumed), the
 * mirror's last outcome recorded (not for a dry run, which changed nothing), both in one
 * transaction; then the pass's counters and the mirror's gauges.
 */
async function closeTrigger(
  pass: MirrorPass,
  trigger: Trigger,
  summary: MirrorSummary,
  c: {
    at: Date;
    keepInFlight: boolean;
    dryRun: boolean;
    heldRevocations?: number | undefined;
    /** Facts written with the close (the skipped pairs, the attempt's error), each issued before any answer. */
    record?: (tx: StoreOps) => Promise<void>;
  },
): Promise<void> {
  const { ctx, mirror } = pass;
  const { outcome, message } = summary;
  const at = c.at.toISOString();
  summary.finished_by =
    c.keepInFlight || !ctx.replica ? null : { instance_id: ctx.replica.id, name: ctx.replica.name };
  await ctx.store.transaction(async (tx) => {
    // Issued at once, in this order, the facts first (one round trip on PostgreSQL, with the
    // lease check): none needs another's answer.
    await Promise.all([
      c.record?.(tx),
      c.keepInFlight
        ? undefined
        : tx.triggers.finish(trigger.id, { outcome, message, summary: kept(summary), finishedAt: at }),
      ...(!c.dryRun && trigger.mode === "full" && outcome === "succeeded"
        ? [
            tx.syncConfigs.fullSucceeded(mirror.name, trigger.id),
            tx.mirrors.fullSucceeded(mirror.name, trigger.id),
          ]
        : []),
      c.dryRun
        ? undefined
        : tx.mirrors.recordOutcome(mirror.name, {
            mode: trigger.mode,
            outcome,
            message,
            at,
            ...(c.heldRevocations === undefined ? {} : { heldRevocations: c.heldRevocations }),
          }),
    ]);
  });
  if (c.dryRun) {
    summary.pairs_awaiting_baseline = await ctx.store.pairs.countAwaitingBaseline(mirror.name);
    return;
  }
  // Gauges first: a scrape that sees the pass counted sees its state too.
  summary.pairs_awaiting_baseline = await refreshMirrorGauges(ctx.store, ctx.metrics, mirror.name);
  const labels = { mirror: mirror.name, mode: summary.mode };
  ctx.metrics.triggers.inc({ ...labels, outcome });
  ctx.metrics.syncDuration.observe(labels, summary.duration_seconds);
}
