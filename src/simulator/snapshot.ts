/** What a finishing source collects: the documents its user sees on its server right now. */
import { contentStatusOf } from "./document-content.js";
import type { RunRecord, SimState, Snapshot, SourceRecord } from "./state.js";

const UNDECIDED_SAMPLE = 20;

/**
 * Collects the visible, live documents at their current version, keeping only indexes, versions and
 * modified times. `fraction` < 1 (INCOMPLETE) keeps that share, in key order. The run's `since`
 * drops documents modified before it (or never), counted as skipped_unchanged.
 */
export function collectSnapshot(
  state: SimState,
  run: RunRecord,
  source: SourceRecord,
  fraction: number,
  fetchedAtMs: number,
): Snapshot {
  const { dataset } = state;
  const docs = dataset.serverDocs(source.server.index);
  const visible = docs.filter((index) => dataset.deleted[index] !== 1 && dataset.isVisible(index, run.user));
  const included = fraction >= 1 ? visible.length : Math.floor(visible.length * Math.max(0, fraction));
  const kept: number[] = [];
  let skippedUnchanged = 0;
  let contentFetchFailed = 0;
  for (let i = 0; i < included; i++) {
    const index = visible[i] ?? 0;
    const modifiedAt = dataset.modifiedAt[index] ?? Number.NaN;
    if (run.sinceMs !== null && (Number.isNaN(modifiedAt) || modifiedAt < run.sinceMs)) {
      skippedUnchanged++;
      continue;
    }
    kept.push(index);
    if (contentStatusOf(dataset, index, dataset.version[index] ?? 1) === "fetch_failed") contentFetchFailed++;
  }
  return {
    index: Int32Array.from(kept),
    version: Uint32Array.from(kept, (index) => dataset.version[index] ?? 1),
    modifiedAt: Float64Array.from(kept, (index) => dataset.modifiedAt[index] ?? Number.NaN),
    visible: visible.length,
    included,
    skippedUnchanged,
    contentFetchFailed,
    undecidedSample: visible.slice(included, included + UNDECIDED_SAMPLE),
    fetchedAtMs,
  };
}
