/**
 * Ingesting one finished run's export, page by page (docs/reference/sync-semantics.md#deletions-and-changes). Each page
 * is one transaction that upserts resources, records access and changes, and moves the
 * checkpoint, so a killed process resumes at the next page (and, like every write of a pass under
 * a lease, first checks the lease: `fence.ts`). Memory is bounded by the page size.
 */
import { setImmediate } from "node:timers/promises";
import { type ExportPage, Resource } from "../api/schemas.js";
import type { StoreOps } from "../store/store.js";
import type {
  PageCounts,
  ResourceInput,
  ResourceWrite,
  Run,
  RunSource,
  SeenRow,
  SourceReport,
  Trigger,
} from "../store/types.js";
import type { MirrorPass } from "./context.js";
import { type ExportPageStream, engineOf, fetchExportPages } from "./export-pages.js";
import { sourceSucceeded } from "./outcome.js";
import { type RejectedRow, recordRejectedRows, recordRunOutcome, type Sighting } from "./record-problems.js";
import { keyOf, serialize, serverOf, toInput } from "./resource-input.js";
import { readSourceErrors, type SourceErrors } from "./source-errors.js";

/**
 * Checking a page's rows takes a few milliseconds: with a break every so often the event loop
 * keeps reading the export pages fetched ahead off their sockets (the service's writes would
 * stall behind them) and /metrics, /healthz and the feed keep answering.
 */
const YIELD_EVERY_ROWS = 50;

/** Reads every remaining page of the run's export into the mirror, from its checkpoint on. */
export async function ingestRun(
  pass: MirrorPass,
  trigger: Trigger,
  run: Run,
  runSources: readonly string[] | undefined,
): Promise<void> {
  const pages = fetchExportPages(pass.ctx, run.syncId, run.nextOffset, trigger.since, runSources);
  // One call per page rather than a loop variable, which would keep the applied page reachable
  // while the next one downloads: a run holds only the pages in flight.
  try {
    while (await ingestNextPage(pass, trigger, run, pages)) {}
  } finally {
    pages.close();
  }
}

async function ingestNextPage(
  pass: MirrorPass,
  trigger: Trigger,
  run: Run,
  pages: ExportPageStream,
): Promise<boolean> {
  const next = await pages.next();
  if (next === undefined) return false;
  const { page, offset } = next;
  // Before the transaction, which runs one at a time: the rows' checks (most of a page's CPU)
  // overlap the other runs' transactions' waits on the database.
  const rows = await checkRows(pass, run, page);
  // A stop ends the run before its next transaction, not only before its next page: a SIGTERM
  // raised while the page before was written is handled by the event loop only after that page
  // committed, and this page may have been taken by then (its rows' check is the first turn).
  await setImmediate();
  pass.ctx.signal.throwIfAborted();
  // Over HTTP, so before the last page's transaction: the text of its failed sources.
  const serviceErrors = page.page.next_offset === null ? await readSourceErrors(pass, run, page) : new Map();
  const applied = await pass.ctx.store.transaction((tx) =>
    applyPage(pass, tx, trigger, run, { page, rows, firstPage: offset === 0, serviceErrors }),
  );
  reportPage(pass, run, applied);
  if (page.page.next_offset !== null) pass.ctx.crashPoint("between-pages");
  return true;
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

/** A page's rows by outcome and source type, for the counters once the page has committed. */
type RowTally = Map<string, { upserted: number; unchanged: number }>;

/** What a page did, reported (counters, log lines) once its transaction has committed. */
interface AppliedPage {
  rows: RowTally;
  /** Resources rejected or repaired, each a warning. */
  warnings: { fields: Record<string, unknown>; message: string }[];
  /** The run's last page: each source's export status. */
  finishedSources?: { sourceType: string; status: string }[];
}

function reportPage({ ctx, mirror }: MirrorPass, run: Run, applied: AppliedPage): void {
  for (const w of applied.warnings) ctx.log.warn(w.fields, w.message);
  for (const [sourceType, n] of applied.rows) {
    const labels = { mirror: mirror.name, source_type: sourceType };
    if (n.upserted > 0) ctx.metrics.resourcesUpserted.inc(labels, n.upserted);
    if (n.unchanged > 0) ctx.metrics.resourcesUnchanged.inc(labels, n.unchanged);
  }
  if (applied.finishedSources === undefined) return;
  for (const s of applied.finishedSources)
    ctx.metrics.sources.inc({ mirror: mirror.name, source_type: s.sourceType, status: s.status });
  ctx.metrics.runs.inc({ mirror: mirror.name, status: run.status });
}

/** A page's row as checked before its transaction: refused for its shape, or ready to store. */
type CheckedRow =
  | { rejected: RejectedRow; warning: AppliedPage["warnings"][number] }
  | { input: ResourceInput; source: string; warning?: AppliedPage["warnings"][number] };

async function checkRows({ ctx }: MirrorPass, run: Run, page: ExportPage): Promise<CheckedRow[]> {
  const rows: CheckedRow[] = [];
  for (const [i, raw] of page.resources.entries()) {
    if (i > 0 && i % YIELD_EVERY_ROWS === 0) await setImmediate();
    const parsed = Resource.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const path = issue?.path.join(".");
      rows.push({
        warning: {
          fields: { sync_id: run.syncId, key: keyOf(raw), path, reason: issue?.message },
          message: "resource rejected: it does not have the documented shape",
        },
        rejected: {
          key: keyOf(raw),
          serverInstanceId: serverOf(raw),
          reason: `it does not have the documented shape: ${path || "(the resource)"}: ${issue?.message ?? "invalid"}`,
        },
      });
      continue;
    }
    const { input, source, textRepaired } = toInput(parsed.data);
    rows.push(
      textRepaired
        ? {
            input,
            source,
            warning: {
              fields: { sync_id: run.syncId, key: input.key },
              message:
                "resource text held unpaired UTF-16 surrogates (not representable in UTF-8): stored with U+FFFD in their place",
            },
          }
        : { input, source },
    );
    ctx.crashPoint("row-checked");
  }
  return rows;
}

/**
 * Runs inside the page transaction, which may run more than once: database work only. What the
 * page did is returned, and counted and logged once it commits (`reportPage`).
 */
async function applyPage(
  pass: MirrorPass,
  tx: StoreOps,
  trigger: Trigger,
  run: Run,
  {
    page,
    rows,
    firstPage,
    serviceErrors,
  }: { page: ExportPage; rows: CheckedRow[]; firstPage: boolean; serviceErrors: SourceErrors },
): Promise<AppliedPage> {
  const { ctx, mirror } = pass;
  const at = ctx.now().toISOString();
  const where = { mirror: mirror.name, at, replica: ctx.replica?.name ?? null };
  const seenAt = run.createdAt as string;
  const engineVersion = engineOf(page);
  // Statements issued together share a round trip on PostgreSQL (its client pipelines); SQLite
  // runs each as it is called, in the same order.
  const firstPageSaved = firstPage
    ? tx.runs.saveFirstPage(run.syncId, {
        schemaVersion: String(page.schema_version),
        engineVersion,
        diagnostics: {
          excluded: page.excluded ?? [],
          undecided: page.undecided ?? [],
          unresolved_requests: page.unresolved_requests ?? [],
          unmatched_tool_calls: page.unmatched_tool_calls ?? [],
        },
        sources: sourceReports(page),
      })
    : undefined;
  const counts: PageCounts = { upserted: 0, unchanged: 0, rejected: 0, keysNew: 0, keysChanged: 0 };
  const tally: RowTally = new Map();
  const warnings: AppliedPage["warnings"] = [];
  const rejected: RejectedRow[] = [];
  const tallyRow = (sourceType: string, outcome: "upserted" | "unchanged") => {
    const n = tally.get(sourceType) ?? { upserted: 0, unchanged: 0 };
    n[outcome]++;
    tally.set(sourceType, n);
  };
  // The page's stored states in one read (one round trip on PostgreSQL), kept current as the page
  // writes, so a key the page repeats sees its own earlier write as it would row by row.
  const keys = new Set(rows.flatMap((row) => ("input" in row ? [row.input.key] : [])));
  // The last page also reads its run and sources here (after a first page's own sources are
  // saved), so that its pairs' and problems' writes go out with the page's.
  const next = page.page.next_offset;
  const [, states, , ran] = await Promise.all([
    tx.resources.holdOffTombstones(),
    tx.resources.findStates([...keys]),
    firstPageSaved,
    next === null ? Promise.all([tx.runs.get(run.syncId), tx.runs.sourcesOf(run.syncId)]) : undefined,
  ]);
  /** The page's accepted rows in order, and whether each wrote its resource. */
  const seen: SeenRow[] = [];
  const written: boolean[] = [];
  const writes: ResourceWrite[] = [];
  for (const row of rows) {
    if ("rejected" in row) {
      counts.rejected++;
      warnings.push(row.warning);
      rejected.push(row.rejected);
      continue;
    }
    const { input: r, source } = row;
    if (row.warning) warnings.push(row.warning);
    const stored = states.get(r.key);
    const changed = stored === undefined || stored.deletedAt !== null || stored.contentHash !== r.contentHash;
    if (changed) {
      // Here rather than with the checks: an unchanged row (most of them, most passes) is not written.
      const serialized = serialize(r);
      if ("reason" in serialized) {
        counts.rejected++;
        warnings.push({
          fields: { sync_id: run.syncId, key: r.key, path: serialized.path, reason: serialized.reason },
          message: "resource rejected: it cannot be stored",
        });
        rejected.push({
          key: r.key,
          serverInstanceId: r.serverInstanceId,
          reason: `it cannot be stored: ${serialized.path ?? "(the resource)"} ${serialized.reason}`,
        });
        continue;
      }
      writes.push(serialized);
      states.set(r.key, { contentHash: r.contentHash, deletedAt: null, updatedAt: at });
      counts.upserted++;
      // A key this pass already wrote (its content moved between two runs) was counted then.
      if (stored === undefined) counts.keysNew++;
      else if (stored.updatedAt < trigger.intentAt) counts.keysChanged++;
      tallyRow(r.sourceType, "upserted");
    } else {
      counts.unchanged++;
      tallyRow(r.sourceType, "unchanged");
    }
    seen.push({
      mirror: mirror.name,
      userEmail: run.userEmail,
      key: r.key,
      serverInstanceId: r.serverInstanceId,
      source,
      seenAt,
    });
    written.push(changed);
    ctx.crashPoint("mid-page");
  }
  // The page's resources, then its access and changes, each at once, in the page's row order, so
  // the feed lists keys as a row-by-row ingest would; all of it one round trip on PostgreSQL.
  const pageWrites = [
    tx.resources.writeAll(writes, engineVersion, at),
    tx.changes.recordSeen(seen, written, { at, mirror: mirror.name, scope: run.syncId }),
    recordRejectedRows(tx, where, run, rejected),
    tx.runs.checkpoint(run.syncId, next, counts),
  ];
  if (ran === undefined) {
    await Promise.all(pageWrites);
    return { rows: tally, warnings };
  }
  const [stored, runSources] = ran;
  const last = { ...where, triggerRowId: trigger.id, serviceErrors };
  const finished = checkpointed(stored, counts);
  const finishedSources = finishRun(pass, tx, trigger, finished, runSources, last);
  await Promise.all([...pageWrites, finishedSources.written]);
  return { rows: tally, warnings, finishedSources: finishedSources.sources };
}

/** The run as its last page's checkpoint (`runs.checkpoint` with no next offset) leaves it. */
function checkpointed(run: Run, c: PageCounts): Run {
  return {
    ...run,
    ingest: "done",
    nextOffset: null,
    upserted: run.upserted + c.upserted,
    unchanged: run.unchanged + c.unchanged,
    rejected: run.rejected + c.rejected,
    keysNew: run.keysNew + c.keysNew,
    keysChanged: run.keysChanged + c.keysChanged,
  };
}

/**
 * The last page is in: each source that succeeded moves its pair's watermark, and the run's
 * problems and errors are recorded (`record-problems.ts`). Issued at once, after the page's own
 * writes (one round trip on PostgreSQL with them); returns the sources and the writes.
 */
function finishRun(
  { mirror }: MirrorPass,
  tx: StoreOps,
  trigger: Trigger,
  finished: Run,
  runSources: readonly RunSource[],
  last: Sighting & { triggerRowId: number; serviceErrors: SourceErrors },
): { sources: NonNullable<AppliedPage["finishedSources"]>; written: Promise<unknown> } {
  const createdAt = finished.createdAt as string;
  const sources: NonNullable<AppliedPage["finishedSources"]> = [];
  const writes: Promise<void>[] = [];
  for (const s of runSources) {
    const pair = { mirror: mirror.name, userEmail: finished.userEmail, serverInstanceId: s.serverInstanceId };
    writes.push(tx.pairs.ran(pair, createdAt));
    if (sourceSucceeded(finished, s))
      writes.push(tx.pairs.succeeded(pair, createdAt, trigger.mode === "full"));
    sources.push({ sourceType: s.sourceType, status: s.exportStatus ?? "unknown" });
  }
  writes.push(recordRunOutcome(tx, last, finished, runSources, last.serviceErrors));
  return { sources, written: Promise.all(writes) };
}
