/**
 * The one place the mirror's gauges are set (docs/reference/metrics.md), all read from the database: after
 * each pass, by the daemon at start-up, and by the daemon after a pass another process ran
 * (`followPasses`), so they are right from the first scrape after a restart and agree whichever
 * replica wrote the state.
 */
import { type Metrics, upstreamLabel } from "../metrics.js";
import { PROBLEM_KINDS } from "../store/console-types.js";
import type { Store } from "../store/store.js";
import { MODES, type Trigger } from "../store/types.js";

/**
 * The reasons served at 0 when no pair has them: the three the upstream API names (docs/reference/upstream-api.md), and `unlisted`, the pairs
 * past the first 100 the trigger lists (`skipped_count` counts them, with no reason).
 */
const KNOWN_SKIP_REASONS = ["not_a_project_user", "not_syncable", "not_accessible", "unlisted"];

/** Per gauge, the other reasons each mirror's series carry now, so one the latest trigger no longer gives is removed. */
const otherReasons = new WeakMap<Metrics["skippedPairs"], Map<string, Set<string>>>();

/**
 * Sets the mirror's gauges and returns how many of its pairs await a baseline (the pass's summary
 * says it too). The reads go out at once: on PostgreSQL the pool answers them together.
 */
export async function refreshMirrorGauges(store: Store, metrics: Metrics, mirror: string): Promise<number> {
  const labels = { mirror };
  const [state, live, awaitingBaseline, inFlight, lastAnswered, open, schedule] = await Promise.all([
    store.mirrors.get(mirror),
    store.access.countLive(mirror),
    store.pairs.countAwaitingBaseline(mirror),
    store.triggers.findInFlight(mirror),
    store.triggers.lastFinished(mirror, { answered: true }),
    store.problems.countByKind(),
    store.schedules.find(mirror),
  ]);
  metrics.resources.set(labels, live);
  metrics.pairsAwaitingBaseline.set(labels, awaitingBaseline);
  metrics.heldRevocations.set(labels, state?.heldRevocations ?? 0);
  // The skipped gauge describes the latest trigger the service answered: the one in flight once
  // its POST was answered. A refused POST, or one whose answer was lost (its runs adopted), says
  // nothing of who is skipped, so the pairs the answer before it skipped stay counted.
  recordSkippedGauge(
    metrics,
    mirror,
    inFlight?.state === "active" && inFlight.skipped !== null ? inFlight : lastAnswered,
  );
  for (const mode of MODES) {
    const last = mode === "full" ? state?.lastFullSuccessAt : state?.lastIncrementalSuccessAt;
    if (last) metrics.lastSuccess.set({ ...labels, mode }, Date.parse(last) / 1000);
  }
  setProblemGauges(metrics, [mirror], open);
  // The scheduler sets it again each round it reads the schedules; this is for the first scrape.
  metrics.mirrorPaused.set(labels, schedule?.paused ? 1 : 0);
  return awaitingBaseline;
}

/**
 * Reads the gauges of each of `mirrors` again whenever its newest finished trigger is not the one
 * they were last read after: a pass another replica (or a one-shot `sync`) ran. The daemon calls
 * `follow` each watch round; it costs one small read per mirror when nothing finished.
 */
export function followPasses(store: Store, metrics: Metrics, mirrors: readonly string[]) {
  const readAfter = new Map<string, string>();
  return {
    async follow(): Promise<void> {
      for (const mirror of mirrors) {
        const last = await store.triggers.lastFinished(mirror);
        const tag = last ? `${last.id} ${last.finishedAt}` : "";
        if (readAfter.get(mirror) === tag) continue;
        await refreshMirrorGauges(store, metrics, mirror);
        readAfter.set(mirror, tag);
      }
    },
  };
}

/**
 * `syncmirror_problems` of `mirrors`, every kind (0 when none is open). The daemon also calls it
 * each watch round: another replica's pass, or an apply, may have opened or cleared some.
 */
export async function refreshProblemGauges(
  store: Store,
  metrics: Metrics,
  mirrors: readonly string[],
): Promise<void> {
  setProblemGauges(metrics, mirrors, await store.problems.countByKind());
}

/**
 * `syncmirror_sync_config_drift` of the declared `mirrors`: 1 while the record of the last apply
 * holds an error. Read from the record, not from this process's own last attempt: an `apply`
 * beside the daemon, or another replica's pass, may have applied it since (or failed to).
 */
export async function refreshDriftGauges(
  store: Store,
  metrics: Metrics,
  mirrors: readonly string[],
): Promise<void> {
  const failed = new Set((await store.syncConfigs.list()).filter((r) => r.lastError).map((r) => r.mirror));
  for (const mirror of mirrors) metrics.syncConfigDrift.set({ mirror }, failed.has(mirror) ? 1 : 0);
}

function setProblemGauges(
  metrics: Metrics,
  mirrors: readonly string[],
  open: readonly { mirror: string; kind: string; n: number }[],
): void {
  for (const mirror of mirrors) {
    for (const kind of PROBLEM_KINDS) {
      const n = open.filter((c) => c.mirror === mirror && c.kind === kind).reduce((sum, c) => sum + c.n, 0);
      metrics.problems.set({ mirror, kind }, n);
    }
  }
}

/**
 * `syncmirror_skipped_pairs` from a trigger's skipped pairs (set again as soon as a trigger starts):
 * its series add up to the trigger's `skipped_count`, and a reason it does not give is 0 (one of
 * KNOWN_SKIP_REASONS) or gone.
 */
export function recordSkippedGauge(metrics: Metrics, mirror: string, trigger: Trigger | undefined): void {
  const gauge = metrics.skippedPairs;
  const counts = new Map(KNOWN_SKIP_REASONS.map((r) => [r, 0]));
  const listed = trigger?.skipped ?? [];
  for (const s of listed) {
    const reason = upstreamLabel(s.reason);
    counts.set(reason, (counts.get(reason) ?? 0) + 1);
  }
  counts.set("unlisted", Math.max(0, (trigger?.skippedCount ?? 0) - listed.length));
  const byMirror = otherReasons.get(gauge) ?? new Map<string, Set<string>>();
  otherReasons.set(gauge, byMirror);
  for (const reason of byMirror.get(mirror) ?? []) if (!counts.has(reason)) gauge.remove({ mirror, reason });
  byMirror.set(mirror, new Set([...counts.keys()].filter((r) => !KNOWN_SKIP_REASONS.includes(r))));
  for (const [reason, n] of counts) gauge.set({ mirror, reason }, n);
}
