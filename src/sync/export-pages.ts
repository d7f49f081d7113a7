/**
 * A run's export pages from its checkpoint on, fetched ahead and handed over strictly in order.
 *
 * The first page carries `page.total` and the page stride (`next_offset - offset`), so the offsets
 * of the following pages can be predicted and requested before they are needed: up to
 * `pagesAheadPerRun` for this run, within the pass-wide PageWindow shared by every run of the pass.
 * Predictions are only requests: each page handed over is the one at the previous page's
 * `next_offset`, so if the service pages differently than predicted (a shorter page, a repeated
 * key) the predicted pages are dropped and paging resumes from the offset it gave. The ingest
 * applies and checkpoints each page before taking the next, so crash resume is unchanged; memory
 * is bounded by the pages in flight.
 */
import type { ExportPage } from "../api/schemas.js";
import { AbortedError, BadResponseError, UnsupportedSchemaVersionError } from "../errors.js";
import type { SyncContext } from "./context.js";

export interface ExportPageStream {
  /**
   * The next page in export order, or undefined after the last; throws what reading that page threw.
   * `failAfter`, on the last page: the export is not the snapshot it must be (it ends before its
   * `page.total`, or it is date-filtered though a full one was asked for). Its rows may be written
   * (upserts are safe), but the run must then fail with this error: a sweep would take the keys
   * it left out for missed.
   */
  next(): Promise<{ page: ExportPage; offset: number; failAfter?: BadResponseError } | undefined>;
  /** Stops fetching ahead and lets go of the pages not taken. Idempotent. */
  close(): void;
}

interface Fetch {
  offset: number;
  page: Promise<ExportPage>;
  abort: AbortController;
  /** Holds a PageWindow slot until taken or dropped. */
  ahead: boolean;
}

export function fetchExportPages(
  ctx: SyncContext,
  syncId: string,
  fromOffset: number | null,
  /** The `since` the run's trigger sent: null asked for a full snapshot. */
  sentSince: string | null,
  /**
   * How many sources the run list shows the run with (0 when it does not list it): a first page
   * listing no source is read only when the run list names some (`ingest.ts` reports them).
   */
  runSourceCount = 0,
): ExportPageStream {
  const { pagesAhead: window, pagesAheadPerRun, exportPageSize } = ctx;
  const stop = new AbortController();
  const onAbort = () => stop.abort(ctx.signal.reason);
  ctx.signal.addEventListener("abort", onAbort, { once: true });
  window.runOpened();
  let closed = false;
  /** Requested ahead, in offset order. */
  const queue: Fetch[] = [];
  let expected = fromOffset;
  let engineVersion: string | null = null;
  /** Met on a page before the last: the run fails once its last page is written. */
  let notSnapshot: BadResponseError | undefined;
  /** Learned from the first page handed over: where the predicted pages end, and their stride. */
  let total: number | undefined;
  let stride = 0;

  const start = (offset: number, ahead: boolean): Fetch => {
    const abort = new AbortController();
    const onStop = () => abort.abort(stop.signal.reason);
    stop.signal.addEventListener("abort", onStop, { once: true });
    const page = ctx.api
      .getExportPage(syncId, { offset, limit: exportPageSize }, abort.signal, {
        onThrottled: () => window.throttled(),
      })
      .then((p) => {
        window.answered();
        return p;
      })
      .finally(() => stop.signal.removeEventListener("abort", onStop));
    // A page fetched ahead may fail before it is needed (or never be needed): its error is
    // reported when it is taken, not as an unhandled rejection.
    page.catch(() => {});
    return { offset, page, abort, ahead };
  };

  const drop = (f: Fetch) => {
    f.abort.abort(new AbortedError("export page no longer needed"));
    if (f.ahead) window.give();
  };

  const fillAhead = () => {
    if (expected === null || total === undefined || stride <= 0) return;
    const last = queue.at(-1);
    let offset = last === undefined ? expected : last.offset + stride;
    while (offset < total && queue.length < pagesAheadPerRun && window.tryTake()) {
      queue.push(start(offset, true));
      offset += stride;
    }
  };

  const take = (offset: number): Fetch =>
    queue[0]?.offset === offset ? (queue.shift() as Fetch) : start(offset, false);

  return {
    async next() {
      if (expected === null) return undefined;
      // A stop (SIGTERM, a lost lease) ends the run before its next page, even one already fetched
      // ahead: the page in progress was the last.
      ctx.signal.throwIfAborted();
      const offset = expected;
      const fetch = take(offset);
      let page: ExportPage;
      try {
        page = await fetch.page;
      } finally {
        if (fetch.ahead) window.give();
      }
      checkPage(syncId, offset, page);
      if (offset === 0) checkSources(syncId, page, runSourceCount);
      notSnapshot ??= dateFiltered(syncId, page, sentSince);
      const failAfter =
        page.page.next_offset === null ? (notSnapshot ?? endedShort(syncId, offset, page)) : undefined;
      const pageEngine = engineOf(page);
      if (engineVersion !== null && pageEngine !== engineVersion) {
        ctx.log.warn(
          { sync_id: syncId, from: engineVersion, to: pageEngine },
          "engine_version changed within one export",
        );
      }
      engineVersion = pageEngine;
      expected = page.page.next_offset;
      // The service paged differently than predicted (or the export ended): drop what was fetched ahead.
      if (queue.length > 0 && queue[0]?.offset !== expected) {
        for (const f of queue.splice(0)) drop(f);
      }
      if (expected !== null && total === undefined) {
        total = page.page.total;
        stride = expected - offset;
      }
      fillAhead();
      return failAfter ? { page, offset, failAfter } : { page, offset };
    },
    close() {
      if (closed) return;
      closed = true;
      for (const f of queue.splice(0)) drop(f);
      window.runClosed();
      expected = null;
      ctx.signal.removeEventListener("abort", onAbort);
      stop.abort(new AbortedError("export paging closed"));
    },
  };
}

/**
 * A readable schema_version; progress: an export that does not advance would loop forever.
 */
function checkPage(syncId: string, offset: number, page: ExportPage): void {
  const major = String(page.schema_version).split(".")[0];
  if (major !== "1" || !/^1(\.\d+)*$/.test(String(page.schema_version))) {
    throw new UnsupportedSchemaVersionError(syncId, page.schema_version, offset);
  }
  const next = page.page.next_offset;
  if (next !== null && next <= offset) {
    throw new BadResponseError(`export of run ${syncId} did not advance (offset ${offset} -> ${next})`, {
      method: "GET",
      route: "/sync-task/{sync_id}/export",
    });
  }
}

/** A date-filtered page where a full snapshot was asked for (the API's example page carries a `since`). */
function dateFiltered(
  syncId: string,
  page: ExportPage,
  sentSince: string | null,
): BadResponseError | undefined {
  if (sentSince !== null || page.since == null) return undefined;
  return new BadResponseError(
    `export of run ${syncId} is date-filtered (since ${page.since}) though its trigger asked for a full snapshot: the rows that came are kept, but the run fails, so its pairs neither move nor sweep; the next full pass asks again`,
    { method: "GET", route: "/sync-task/{sync_id}/export" },
  );
}

/**
 * An end before the export's own total (the API's example page says `total: 9` beside its one
 * resource): the rows that came are as good as any (upserts are safe), but a sweep would take the
 * keys never delivered for missed, so the run fails once they are written.
 */
function endedShort(syncId: string, offset: number, page: ExportPage): BadResponseError | undefined {
  const { total, next_offset: next } = page.page;
  const delivered = offset + page.resources.length;
  if (next !== null || total === undefined || delivered >= total) return undefined;
  return new BadResponseError(
    `export of run ${syncId} ended after ${delivered} of the ${total} resources its page.total gives: the rows that came are kept, but the run fails, so its pairs neither move nor sweep; the next pass asks again`,
    { method: "GET", route: "/sync-task/{sync_id}/export" },
  );
}

/**
 * The first page's sources, with those the run list gives the run, decide which pairs succeeded,
 * swept, or left the trigger. A source the page leaves out (the service's own example export omits
 * a FAILED one) is reported as not succeeded by the ingest; a run neither names has no pair the
 * page's rows could be told apart by, and fails.
 */
function checkSources(syncId: string, page: ExportPage, runSourceCount: number): void {
  if (page.sources.length > 0 || runSourceCount > 0) return;
  throw new BadResponseError(
    `the first export page of run ${syncId} lists no sources, and the run list names none: the answer is incomplete, so the run fails and its pairs neither move, sweep nor lose access; the next pass reads it again`,
    { method: "GET", route: "/sync-task/{sync_id}/export" },
  );
}

export function engineOf(page: ExportPage): string | null {
  return page.engine_version == null ? null : String(page.engine_version);
}
