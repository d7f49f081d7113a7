/**
 * Per-source results of a finished source: counts, export status, diagnostics, and the side lists
 * (excluded, undecided, unresolved requests, unmatched tool calls). The side lists are a few
 * plausible items derived from the task id, so they are stable across reads.
 */
import type { Dataset } from "./dataset.js";
import { hash32, randomFor, randomHex } from "./random.js";
import type { ExportStatus, SimState, SourceRecord } from "./state.js";

export interface SideItems {
  excluded: Record<string, unknown>[];
  undecided: Record<string, unknown>[];
  unresolved: Record<string, unknown>[];
  unmatched: Record<string, unknown>[];
  /** Full undecided count (the list holds a sample). */
  undecidedCount: number;
}

const EMPTY: SideItems = { excluded: [], undecided: [], unresolved: [], unmatched: [], undecidedCount: 0 };
const EXCLUDE_REASONS = ["Archived content is out of scope", "Personal notes", "Duplicate of another page"];

export function sideItemsOf(state: SimState, source: SourceRecord): SideItems {
  const snapshot = source.snapshot;
  if (!snapshot) return EMPTY;
  const { dataset } = state;
  const server = source.server;
  const random = randomFor(dataset.seed, "side", source.taskId);
  const prefix = `${server.source_type}:${server.server_instance_id}:`;
  const excluded = Array.from({ length: 1 + random.int(0, 3) }, (_, i) => {
    const nativeId = server.source_type === "github" ? `acme/archive#${100 + i}` : randomHex(random, 32);
    return {
      key: `${prefix}${nativeId}`,
      source: source.label,
      native_id: nativeId,
      title: `Archive: ${2020 + i} retro`,
      reason: random.pick(EXCLUDE_REASONS),
      by: "agent",
    };
  });
  const unresolved = random.chance(0.5)
    ? [{ request: "Read the Finance teamspace", reason: "authentication_required", source: source.label }]
    : [];
  const unmatched = Array.from({ length: 1 + random.int(0, 2) }, (_, i) => ({
    tool_call_id: `call_${11 + i}`,
    tool: `${server.source_type}-search`,
    reason: "search_results_only",
    source: source.label,
  }));
  const undecided = snapshot.undecidedSample.map((index) => undecidedItem(dataset, source.label, index));
  const undecidedCount = snapshot.visible - snapshot.included;
  return { excluded, undecided, unresolved, unmatched, undecidedCount };
}

function undecidedItem(dataset: Dataset, label: string, index: number) {
  return {
    key: dataset.key(index),
    source: label,
    native_id: dataset.nativeId(index),
    title: dataset.title(index),
    reason: "iteration_limit",
  };
}

export function exportStatusOf(source: SourceRecord): ExportStatus {
  if (source.forcedExportStatus) return source.forcedExportStatus;
  return (source.snapshot?.index.length ?? 0) > 0 ? "ok" : "no_results";
}

export function countsOf(source: SourceRecord, side: SideItems) {
  const s = source.snapshot;
  const included = s?.included ?? 0;
  return {
    resources_seen: s ? included + side.excluded.length + side.undecidedCount : 0,
    included,
    exported: s?.index.length ?? 0,
    excluded: side.excluded.length,
    undecided: side.undecidedCount,
    unresolved: side.unresolved.length,
    unmatched_tool_calls: side.unmatched.length,
    skipped_unchanged: s?.skippedUnchanged ?? 0,
    content_fetch_failed: s?.contentFetchFailed ?? 0,
  };
}

export function diagnosticsOf(source: SourceRecord) {
  const status = source.forcedExportStatus;
  if (status === "degraded") {
    return { degraded: true, degraded_reasons: ["many tool responses were unreadable", "unsupported tools"] };
  }
  if (status === "config_stale") return { degraded: false, degraded_reasons: ["server tools changed"] };
  return { degraded: false, degraded_reasons: [] };
}

export function configWarningsOf(source: SourceRecord): string[] {
  return source.forcedExportStatus === "config_stale"
    ? ["The server's tools changed since this config was saved; its content can no longer be read."]
    : [];
}

/** The run detail's `summary` for a source: null until it finishes, and for FAILED sources. */
export function summaryOf(state: SimState, source: SourceRecord) {
  if (!source.snapshot || source.status === "FAILED") return null;
  return {
    status: exportStatusOf(source),
    counts: countsOf(source, sideItemsOf(state, source)),
    diagnostics: diagnosticsOf(source),
  };
}

/** A stable per-source integer, e.g. for transcript lengths. */
export function sourceHash(state: SimState, source: SourceRecord): number {
  return hash32(state.dataset.seed, "source", source.taskId);
}
