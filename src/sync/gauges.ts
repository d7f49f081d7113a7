/**
 * The one place the mirror's gauges are set (docs/reference/metrics.md), all read from the database: after
 * each pass, and by the daemon at start-up, so they are right from the first scrape after a
 * restart and agree whichever replica wrote the state.
 */
import type { Metrics } from "../metrics.js";
import { PROBLEM_KINDS } from "../store/console-types.js";
import type { Store } from "../store/store.js";
import { MODES, type Trigger } from "../store/types.js";

const KNOWN_SKIP_REASONS = ["not_a_project_user", "not_syncable", "not_accessible"];

export async function refreshMirrorGauges(store: Store, metrics: Metrics, mirror: string): Promise<void> {
  const labels = { mirror };
  const state = await store.mirrors.get(mirror);
  metrics.resources.set(labels, await store.access.countLive(mirror));
  metrics.pairsAwaitingBaseline.set(labels, await store.pairs.countAwaitingBaseline(mirror));
  metrics.heldRevocations.set(labels, state?.heldRevocations ?? 0);
  // The skipped gauge describes the latest trigger: the one in flight once its POST was answered.
  const inFlight = await store.triggers.findInFlight(mirror);
  recordSkippedGauge(
    metrics,
    mirror,
    inFlight?.state === "active" ? inFlight : await store.triggers.lastFinished(mirror),
  );
  for (const mode of MODES) {
    const last = mode === "full" ? state?.lastFullSuccessAt : state?.lastIncrementalSuccessAt;
    if (last) metrics.lastSuccess.set({ ...labels, mode }, Date.parse(last) / 1000);
  }
  await refreshProblemGauges(store, metrics, [mirror]);
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
  const open = await store.problems.countByKind();
  for (const mirror of mirrors) {
    for (const kind of PROBLEM_KINDS) {
      const n = open.filter((c) => c.mirror === mirror && c.kind === kind).reduce((sum, c) => sum + c.n, 0);
      metrics.problems.set({ mirror, kind }, n);
    }
  }
}

/** `syncmirror_skipped_pairs` from a trigger's skipped list (set again as soon as a trigger starts). */
export function recordSkippedGauge(metrics: Metrics, mirror: string, trigger: Trigger | undefined): void {
  const counts = new Map(KNOWN_SKIP_REASONS.map((r) => [r, 0]));
  for (const s of trigger?.skipped ?? []) counts.set(s.reason, (counts.get(s.reason) ?? 0) + 1);
  for (const [reason, n] of counts) metrics.skippedPairs.set({ mirror, reason }, n);
}
