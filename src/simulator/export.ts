/**
 * GET /sync-task/{id}/export: one page at a time, rendered from the sources' snapshots. Nothing is
 * built beyond the requested page, so a 100k-resource export costs one page of memory.
 */
import { compare } from "./dataset.js";
import { HttpError } from "./http-error.js";
import { findSource } from "./lifecycle.js";
import { intParam, type Query } from "./paging.js";
import { buildResource } from "./resource.js";
import type { Reply } from "./router.js";
import { isFinished, type RunRecord, type SimState, type SourceRecord } from "./state.js";
import { configWarningsOf, countsOf, diagnosticsOf, exportStatusOf, sideItemsOf } from "./summary.js";
import { sourceIdentity } from "./trigger.js";

export const EXPORT_DEFAULT_LIMIT = 100;
export const EXPORT_MAX_LIMIT = 500;

/** Reliability quirks, each consumed by the next export page served with offset > 0. */
export interface ExportQuirkSwitch {
  takeRepeatKey(): boolean;
  takeEngineChange(): boolean;
}

/** The 409 `detail` of an export asked for before its sources finished. */
export function notFinishedDetail(sources: readonly { source: string; status: string }[]) {
  return { message: "The export is available once the run has finished.", sources };
}

/** The `not-finished` fault: an export answer replaced by its 409, each of its sources RUNNING. */
export function notFinishedReply(body: unknown): Reply {
  const listed = (body as { sources?: unknown } | null)?.sources;
  const labels = Array.isArray(listed)
    ? listed.flatMap((s) => (typeof s?.source === "string" ? [s.source as string] : []))
    : [];
  return {
    status: 409,
    body: { detail: notFinishedDetail(labels.map((source) => ({ source, status: "RUNNING" }))) },
  };
}

export function exportPage(state: SimState, run: RunRecord, query: Query, quirks: ExportQuirkSwitch) {
  const label = query.source;
  const targets = label === undefined || label === "" ? run.sources : [findSource(run, label)];
  if (!targets.every((s) => isFinished(s.status))) {
    throw new HttpError(
      409,
      notFinishedDetail(run.sources.map((s) => ({ source: s.label, status: s.status }))),
    );
  }
  const offset = intParam(query, "offset", 0, 0, Number.MAX_SAFE_INTEGER);
  const limit = intParam(query, "limit", EXPORT_DEFAULT_LIMIT, 1, EXPORT_MAX_LIMIT);
  if (offset > 0 && quirks.takeEngineChange()) state.engineVersion = bumpVersion(state.engineVersion);
  const start = offset > 0 && quirks.takeRepeatKey() ? offset - 1 : offset;
  const ordered = [...targets].sort((a, b) => compare(keyPrefix(a), keyPrefix(b)));
  const total = ordered.reduce((sum, s) => sum + (s.snapshot?.index.length ?? 0), 0);
  const end = Math.min(start + limit, total);
  const sides = targets.map((s) => sideItemsOf(state, s));
  return {
    schema_version: state.schemaVersion,
    engine_version: state.engineVersion,
    sync_id: run.syncId,
    since: run.since,
    sources: targets.map((s, i) => exportSourceEntry(s, countsOf(s, sides[i] ?? sideItemsOf(state, s)))),
    resources: resourcesBetween(state, ordered, start, end),
    ...(offset === 0 ? firstPageLists(sides) : {}),
    page: { offset, limit, total, next_offset: end < total ? end : null },
  };
}

function resourcesBetween(state: SimState, ordered: readonly SourceRecord[], start: number, end: number) {
  const resources: ReturnType<typeof buildResource>[] = [];
  let base = 0;
  for (const source of ordered) {
    const snapshot = source.snapshot;
    const size = snapshot?.index.length ?? 0;
    if (snapshot && end > base && start < base + size) {
      const ctx = {
        dataset: state.dataset,
        label: source.label,
        engineVersion: state.engineVersion,
        fetchedAtMs: snapshot.fetchedAtMs,
      };
      for (let i = Math.max(0, start - base); i < Math.min(size, end - base); i++) {
        resources.push(
          buildResource(
            ctx,
            snapshot.index[i] ?? 0,
            snapshot.version[i] ?? 1,
            snapshot.modifiedAt[i] ?? Number.NaN,
          ),
        );
      }
    }
    base += size;
  }
  return resources;
}

function firstPageLists(sides: ReturnType<typeof sideItemsOf>[]) {
  return {
    excluded: sides.flatMap((s) => s.excluded),
    undecided: sides.flatMap((s) => s.undecided),
    unresolved_requests: sides.flatMap((s) => s.unresolved),
    unmatched_tool_calls: sides.flatMap((s) => s.unmatched),
  };
}

function exportSourceEntry(source: SourceRecord, counts: ReturnType<typeof countsOf>) {
  return {
    ...sourceIdentity(source),
    task_id: source.taskId,
    session_id: source.sessionId,
    task_status: source.status,
    rules_version: 1,
    resolved_by: "explicit",
    status: exportStatusOf(source),
    counts,
    config_warnings: configWarningsOf(source),
    diagnostics: diagnosticsOf(source),
  };
}

function keyPrefix(source: SourceRecord): string {
  return `${source.server.source_type}:${source.server.server_instance_id}:`;
}

/** The next engine version: integers count up; other strings get a `.1` suffix. */
export function bumpVersion(version: number | string): number | string {
  if (typeof version === "number") return version + 1;
  const n = Number(version);
  return Number.isInteger(n) && version.trim() !== "" ? String(n + 1) : `${version}.1`;
}
