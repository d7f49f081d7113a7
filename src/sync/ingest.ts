/**
 * Ingesting one finished run's export, page by page (SPEC "Sync semantics", "Changes"). Each page
 * is one transaction that upserts resources, records access and changes, and moves the
 * checkpoint, so a killed process resumes at the next page. Memory is bounded by the page size.
 */
import { type ExportPage, Resource } from "../api/schemas.js";
import { BadResponseError, UnsupportedSchemaVersionError } from "../errors.js";
import type { ResourceInput } from "../store/resources.js";
import type { RunRow, SourceReport, TriggerRow } from "../store/state.js";
import type { MirrorPass, SyncContext } from "./context.js";
import { sourceSucceeded } from "./outcome.js";

export const EXPORT_PAGE_LIMIT = 500;

/**
 * The run's export pages from `offset` on, each checked for a readable schema_version and for
 * progress; the caller handles one page before the next is fetched.
 */
export async function* exportPages(
  ctx: SyncContext,
  syncId: string,
  offset: number | null,
): AsyncGenerator<{ page: ExportPage; offset: number }> {
  let engineVersion: string | null = null;
  let page: ExportPage | undefined;
  while (offset !== null) {
    // Let go of the previous page before waiting for the next: a suspended generator keeps its
    // variables, so without this each run would hold two pages while downloading.
    page = undefined;
    page = await ctx.api.getExportPage(syncId, { offset, limit: EXPORT_PAGE_LIMIT }, ctx.signal);
    const major = String(page.schema_version).split(".")[0];
    if (major !== "1" || !/^1(\.\d+)*$/.test(String(page.schema_version))) {
      throw new UnsupportedSchemaVersionError(syncId, page.schema_version);
    }
    const next = page.page.next_offset;
    if (next !== null && next <= offset) {
      throw new BadResponseError(`export of run ${syncId} did not advance (offset ${offset} -> ${next})`, {
        method: "GET",
        route: "/sync-task/{sync_id}/export",
      });
    }
    const pageEngine = engineOf(page);
    if (engineVersion !== null && pageEngine !== engineVersion) {
      ctx.log.warn(
        { sync_id: syncId, from: engineVersion, to: pageEngine },
        "engine_version changed within one export",
      );
    }
    engineVersion = pageEngine;
    yield { page, offset };
    offset = next;
  }
}

/** Reads every remaining page of the run's export into the mirror, from its checkpoint on. */
export async function ingestRun(pass: MirrorPass, trigger: TriggerRow, run: RunRow): Promise<void> {
  const pages = exportPages(pass.ctx, run.syncId, run.nextOffset);
  // One call per page rather than `for await`, whose loop keeps the last page reachable while the
  // next one downloads: with the generator's own care, a run holds one page at a time.
  while (await ingestNextPage(pass, trigger, run, pages)) {}
}

async function ingestNextPage(
  pass: MirrorPass,
  trigger: TriggerRow,
  run: RunRow,
  pages: AsyncGenerator<{ page: ExportPage; offset: number }>,
): Promise<boolean> {
  const next = await pages.next();
  if (next.done) return false;
  const { page, offset } = next.value;
  pass.ctx.store.transaction(() => applyPage(pass, trigger, run, page, offset === 0));
  if (page.page.next_offset !== null) pass.ctx.crashPoint("between-pages");
  return true;
}

export function engineOf(page: ExportPage): string | null {
  return page.engine_version == null ? null : String(page.engine_version);
}

/** The first page's per-source statuses and counts, as the run keeps them. */
export function sourceReports(page: ExportPage): SourceReport[] {
  return page.sources.map((s) => ({
    source: s.source,
    sourceType: s.source_type,
    serverInstanceId: s.server_instance_id,
    taskStatus: s.task_status,
    exportStatus: s.status,
    counts: s.counts ?? null,
  }));
}

/** Synchronous: runs inside the page transaction. */
function applyPage(
  pass: MirrorPass,
  trigger: TriggerRow,
  run: RunRow,
  page: ExportPage,
  firstPage: boolean,
): void {
  const { ctx, mirror } = pass;
  const { store, metrics } = ctx;
  const at = ctx.now().toISOString();
  const seenAt = run.createdAt as string;
  const engineVersion = engineOf(page);
  if (firstPage) {
    store.state.saveFirstPage(run.syncId, {
      schemaVersion: String(page.schema_version),
      engineVersion,
      diagnostics: {
        excluded: page.excluded ?? [],
        undecided: page.undecided ?? [],
        unresolved_requests: page.unresolved_requests ?? [],
        unmatched_tool_calls: page.unmatched_tool_calls ?? [],
      },
      sources: sourceReports(page),
    });
  }
  const counts = { upserted: 0, unchanged: 0, rejected: 0 };
  for (const raw of page.resources) {
    const parsed = Resource.safeParse(raw);
    if (!parsed.success) {
      counts.rejected++;
      const issue = parsed.error.issues[0];
      ctx.log.warn(
        { sync_id: run.syncId, key: keyOf(raw), path: issue?.path.join("."), reason: issue?.message },
        "resource rejected: it does not have the documented shape",
      );
      continue;
    }
    const { input: r, source, textRepaired } = toInput(parsed.data);
    if (textRepaired) {
      ctx.log.warn(
        { sync_id: run.syncId, key: r.key },
        "resource text held unpaired UTF-16 surrogates (not representable in UTF-8): stored with U+FFFD in their place",
      );
    }
    const stored = store.resources.findState(r.key);
    const changed = stored === undefined || stored.deletedAt !== null || stored.contentHash !== r.contentHash;
    if (changed) {
      const unstorable = tryWrite(ctx, r, engineVersion, at);
      if (unstorable !== null) {
        counts.rejected++;
        ctx.log.warn(
          { sync_id: run.syncId, key: r.key, path: unstorable.path, reason: unstorable.reason },
          "resource rejected: it cannot be stored",
        );
        continue;
      }
      counts.upserted++;
      metrics.resourcesUpserted.inc({ mirror: mirror.name, source_type: r.sourceType });
    } else {
      counts.unchanged++;
      metrics.resourcesUnchanged.inc({ mirror: mirror.name, source_type: r.sourceType });
    }
    const newAccess = store.access.see({
      mirror: mirror.name,
      userEmail: run.userEmail,
      key: r.key,
      serverInstanceId: r.serverInstanceId,
      source,
      seenAt,
    });
    if (changed || newAccess) {
      store.changes.record({
        key: r.key,
        op: changed ? "upsert" : "access",
        at,
        mirror: mirror.name,
        scope: run.syncId,
      });
    }
    ctx.crashPoint("mid-page");
  }
  const next = page.page.next_offset;
  store.state.checkpoint(run.syncId, next, counts);
  if (next === null) finishRun(pass, trigger, run);
}

/** The last page is in: each source that succeeded moves its pair's watermark. */
function finishRun({ ctx, mirror }: MirrorPass, trigger: TriggerRow, run: RunRow): void {
  const { store, metrics } = ctx;
  const createdAt = run.createdAt as string;
  // Re-read: the checkpoint just marked it done and added this page's rejections.
  const finished = store.state.getRun(run.syncId);
  for (const s of store.state.sourcesOf(run.syncId)) {
    const pair = { mirror: mirror.name, userEmail: run.userEmail, serverInstanceId: s.serverInstanceId };
    store.pairs.ran(pair, createdAt);
    if (sourceSucceeded(finished, s)) store.pairs.succeeded(pair, createdAt, trigger.mode === "full");
    metrics.sources.inc({
      mirror: mirror.name,
      source_type: s.sourceType,
      status: s.exportStatus ?? "unknown",
    });
  }
  metrics.runs.inc({ mirror: mirror.name, status: run.status });
}

const JSON_PARTS = ["fields", "metadata", "relations", "attachments", "provenance"] as const;

/**
 * Writes one resource. A value JSON.stringify cannot serialize (nesting deeper than the stack
 * allows: JSON.parse accepted it) is that resource's problem, not the page's: it is rejected alone
 * before anything of it is written. Database errors still stop the page.
 */
function tryWrite(
  ctx: SyncContext,
  r: ResourceInput,
  engineVersion: string | null,
  at: string,
): { path: string | undefined; reason: string } | null {
  try {
    ctx.store.resources.write(r, engineVersion, at);
    return null;
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    const path = JSON_PARTS.find((part) => {
      try {
        JSON.stringify(r[part]);
        return false;
      } catch {
        return true;
      }
    });
    return { path, reason: `cannot be stored as JSON (${error.message}): nested too deeply or too large` };
  }
}

function keyOf(raw: unknown): string | undefined {
  const key = (raw as { key?: unknown } | null)?.key;
  return typeof key === "string" ? key : undefined;
}

/**
 * SQLite text is UTF-8, which cannot hold an unpaired UTF-16 surrogate (JSON allows `"\ud800"`):
 * better-sqlite3 would write bytes that are not UTF-8, which other readers of the mirror refuse.
 * Each one becomes U+FFFD, and the resource says so. JSON columns keep them, escaped.
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function toInput(r: Resource): { input: ResourceInput; source: string; textRepaired: boolean } {
  let textRepaired = false;
  const text = <T extends string | null>(value: T): T => {
    if (value === null || !/[\uD800-\uDFFF]/.test(value)) return value;
    const repaired = value.replace(LONE_SURROGATE, "\uFFFD");
    textRepaired ||= repaired !== value;
    return repaired as T;
  };
  const input: ResourceInput = {
    key: text(r.key),
    contentHash: text(r.content_hash),
    contentText: text(r.content?.text ?? null),
    contentFormat: text(r.content?.format ?? null),
    contentStatus: text(r.content_status ?? null),
    title: text(r.title ?? null),
    url: text(r.url ?? null),
    type: text(r.type ?? null),
    sourceType: text(r.source_type),
    serverInstanceId: text(r.server_instance_id),
    nativeId: text(r.native_id),
    modifiedAt: text(r.modified_at ?? null),
    fetchedAt: text(r.fetched_at ?? null),
    fields: r.fields,
    metadata: r.metadata,
    relations: r.relations,
    attachments: r.attachments,
    provenance: r.provenance,
  };
  return { input, source: text(r.source), textRepaired };
}
