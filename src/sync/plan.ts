/**
 * Planning a pass (docs/reference/sync-semantics.md#watermarks-and-since): which pairs are active, and the `since` to send.
 */
import type { MirrorConfig } from "../config.js";
import type { Mode, Pair } from "../store/types.js";

export interface Plan {
  mode: Mode;
  /** ISO timestamp to send, or null for a full snapshot. */
  since: string | null;
  /** Pairs too far behind the newest watermark: they stop holding `since` back and await a baseline. */
  stale: Pair[];
}

/** The newest watermark among the mirror's pairs (server clock), or null. */
export function newestWatermark(pairs: readonly Pair[]): string | null {
  let newest: string | null = null;
  for (const p of pairs)
    if (p.watermark !== null && (newest === null || p.watermark > newest)) newest = p.watermark;
  return newest;
}

/** How far (ms) a pair lags the mirror's newest watermark; a pair that never succeeded counts from first sight. */
export function lagMs(pair: Pair, newest: string | null): number {
  if (newest === null) return 0;
  return Date.parse(newest) - Date.parse(pair.watermark ?? pair.firstSeenAt);
}

/**
 * Whether the pair still counts: not retired, and its user not skipped as having left the project
 * by the latest trigger that listed it. A user who left loses their access only at the next full
 * snapshot, but stops holding `since` back at once; running again (back in the project) clears it.
 */
function pairInPlay(p: Pair): boolean {
  return p.retiredAt === null && p.skipReason !== LEFT_PROJECT;
}

const LEFT_PROJECT = "not_a_project_user";

/** The pairs in play, split by whether they lag the newest watermark by more than the grace. */
function splitByLag(pairs: readonly Pair[], mirror: MirrorConfig): { current: Pair[]; stale: Pair[] } {
  const newest = newestWatermark(pairs);
  const graceMs = mirror.inaccessibleGraceHours * 3_600_000;
  const current: Pair[] = [];
  const stale: Pair[] = [];
  for (const p of pairs) {
    if (!pairInPlay(p)) continue;
    (lagMs(p, newest) > graceMs ? stale : current).push(p);
  }
  return { current, stale };
}

/**
 * Pairs that lag too far behind but are not yet marked as awaiting a baseline: a pass that moved
 * the newest watermark marks them as it settles, so `status` counts them as soon as `since`
 * stops waiting for them, not one pass later.
 */
export function newlyStalePairs(pairs: readonly Pair[], mirror: MirrorConfig): Pair[] {
  return splitByLag(pairs, mirror).stale.filter((p) => !p.awaitingBaseline);
}

export function planPass(pairs: readonly Pair[], mirror: MirrorConfig, forceFull: boolean): Plan {
  const { current, stale } = splitByLag(pairs, mirror);
  const active = current.filter((p) => p.watermark !== null);
  if (forceFull || active.length === 0) return { mode: "full", since: null, stale };
  let oldest = Number.POSITIVE_INFINITY;
  for (const p of active) oldest = Math.min(oldest, Date.parse(p.watermark as string));
  const since = new Date(oldest - mirror.sinceOverlapSeconds * 1000).toISOString();
  return { mode: "incremental", since, stale };
}
