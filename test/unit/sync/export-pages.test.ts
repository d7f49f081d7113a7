import { describe, expect, it } from "vitest";
import type { ExportPage } from "../../../src/api/schemas.js";
import { UnavailableError, UnsupportedSchemaVersionError } from "../../../src/errors.js";
import { silentLogger } from "../../../src/log.js";
import type { SyncContext } from "../../../src/sync/context.js";
import { fetchExportPages } from "../../../src/sync/export-pages.js";
import { createPageWindow, type PageWindow } from "../../../src/sync/page-window.js";

interface Request {
  offset: number;
  signal: AbortSignal;
  onThrottled?: () => void;
  answered: boolean;
  resolve(page: ExportPage): void;
  reject(error: unknown): void;
}

/** An API whose export requests stay open until the test answers them, in any order. */
function fakeExport(options: { perRun?: number; window?: PageWindow } = {}) {
  const requests: Request[] = [];
  const controller = new AbortController();
  const ctx = {
    api: {
      getExportPage(
        _syncId: string,
        query: { offset: number },
        signal: AbortSignal,
        hooks?: { onThrottled?: () => void },
      ) {
        return new Promise<ExportPage>((resolve, reject) => {
          const request: Request = {
            offset: query.offset,
            signal,
            onThrottled: hooks?.onThrottled,
            answered: false,
            resolve: (p) => {
              request.answered = true;
              resolve(p);
            },
            reject: (e) => {
              request.answered = true;
              reject(e);
            },
          };
          requests.push(request);
        });
      },
    },
    pagesAhead: options.window ?? createPageWindow(8),
    exportPageSize: 10,
    pagesAheadPerRun: options.perRun ?? 4,
    signal: controller.signal,
    log: silentLogger(),
  } as unknown as SyncContext;
  const open = () => requests.filter((r) => !r.signal.aborted && !r.answered);
  const find = (offset: number) => {
    const r = requests.find((x) => x.offset === offset && !x.signal.aborted && !x.answered);
    if (!r) throw new Error(`no open request for offset ${offset}; open: ${open().map((x) => x.offset)}`);
    return r;
  };
  return { ctx, requests, open, find, abort: () => controller.abort() };
}

/** A page of `size` keys at `offset` in an export of `total` keys. */
function page(offset: number, total: number, size = 10, schemaVersion: number | string = 1): ExportPage {
  const end = Math.min(offset + size, total);
  return {
    schema_version: schemaVersion,
    sync_id: "run-1",
    sources: [
      {
        source: "notion",
        source_type: "notion",
        server_instance_id: "s1",
        task_status: "COMPLETED",
        status: "ok",
      },
    ],
    resources: Array.from({ length: end - offset }, (_, i) => ({ key: `k${offset + i}` })),
    page: { offset, total, next_offset: end < total ? end : null },
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("export pages fetched ahead", () => {
  it("asks for one page until the first answers, then for the next pages ahead of need", async () => {
    const api = fakeExport();
    const pages = fetchExportPages(api.ctx, "run-1", 0, null);
    const first = pages.next();
    await tick();
    expect(api.open().map((r) => r.offset)).toEqual([0]);
    api.find(0).resolve(page(0, 100));
    expect((await first)?.offset).toBe(0);
    // The page needed next is fetched ahead too; four pages ahead of the one being applied.
    expect(api.open().map((r) => r.offset)).toEqual([10, 20, 30, 40]);
    pages.close();
  });

  it("hands pages over in export order when their answers arrive in reverse", async () => {
    const api = fakeExport();
    const pages = fetchExportPages(api.ctx, "run-1", 0, null);
    const first = pages.next();
    await tick();
    api.find(0).resolve(page(0, 50));
    await first;
    for (const offset of [40, 30, 20, 10]) api.find(offset).resolve(page(offset, 50));
    const order: number[] = [];
    for (let next = await pages.next(); next; next = await pages.next()) order.push(next.offset);
    expect(order).toEqual([10, 20, 30, 40]);
    expect(api.requests.map((r) => r.offset).sort((a, b) => a - b)).toEqual([0, 10, 20, 30, 40]);
  });

  it("keeps no more pages in flight than the run's limit and the pass's window allow", async () => {
    const window = createPageWindow(4);
    const a = fakeExport({ perRun: 2, window });
    const b = fakeExport({ perRun: 2, window });
    const pagesA = fetchExportPages(a.ctx, "run-a", 0, null);
    const pagesB = fetchExportPages(b.ctx, "run-b", 0, null);
    const [firstA, firstB] = [pagesA.next(), pagesB.next()];
    await tick();
    a.find(0).resolve(page(0, 100));
    await firstA;
    expect(a.open()).toHaveLength(2);
    b.find(0).resolve(page(0, 100));
    await firstB;
    // Run b's own request is one page of the window of 4, run a holds two: b fetches one ahead.
    expect(b.open()).toHaveLength(1);
    expect(window.taken).toBe(3);
    pagesA.close();
    pagesB.close();
    expect(window.taken).toBe(0);
  });

  it("gives a run the whole window once the runs beside it have ended", async () => {
    const window = createPageWindow(4);
    const a = fakeExport({ perRun: 4, window });
    const b = fakeExport({ perRun: 4, window });
    const pagesA = fetchExportPages(a.ctx, "run-a", 0, null);
    const pagesB = fetchExportPages(b.ctx, "run-b", 0, null);
    const firstA = pagesA.next();
    await tick();
    a.find(0).resolve(page(0, 100));
    await firstA;
    // Two runs open: three pages ahead, not four.
    expect(a.open().map((r) => r.offset)).toEqual([10, 20, 30]);
    pagesB.close();
    a.find(10).resolve(page(10, 100));
    await pagesA.next();
    expect(a.open().map((r) => r.offset)).toEqual([20, 30, 40, 50]);
    pagesA.close();
    expect(b.open()).toEqual([]);
  });

  it("drops the predicted pages and follows next_offset when the service pages differently", async () => {
    const api = fakeExport({ perRun: 2 });
    const pages = fetchExportPages(api.ctx, "run-1", 0, null);
    const first = pages.next();
    await tick();
    api.find(0).resolve(page(0, 40));
    await first;
    const second = pages.next();
    // The page at 10 is one short: next_offset 19, not the predicted 20.
    api.find(10).resolve({ ...page(10, 40, 9) });
    expect((await second)?.page.page.next_offset).toBe(19);
    expect(api.requests.find((r) => r.offset === 20)?.signal.aborted).toBe(true);
    const third = pages.next();
    await tick();
    api.find(19).resolve(page(19, 40, 21));
    expect((await third)?.offset).toBe(19);
    expect(await pages.next()).toBeUndefined();
  });

  it("reports a page's failure only when that page is due, after the pages before it", async () => {
    const api = fakeExport();
    const pages = fetchExportPages(api.ctx, "run-1", 0, null);
    const first = pages.next();
    await tick();
    api.find(0).resolve(page(0, 40));
    await first;
    api.find(20).reject(new UnavailableError("GET export still failed", { method: "GET", route: "/x" }));
    api.find(10).resolve(page(10, 40));
    expect((await pages.next())?.offset).toBe(10);
    await expect(pages.next()).rejects.toBeInstanceOf(UnavailableError);
    pages.close();
    expect(api.open()).toEqual([]);
  });

  it("refuses an unreadable schema_version before handing anything of that page over", async () => {
    const api = fakeExport();
    const pages = fetchExportPages(api.ctx, "run-1", 0, null);
    const first = pages.next();
    await tick();
    api.find(0).resolve(page(0, 40, 10, "2.0"));
    await expect(first).rejects.toBeInstanceOf(UnsupportedSchemaVersionError);
    pages.close();
  });

  it("fetches fewer pages ahead after a 429, and more again as answers come", async () => {
    const window = createPageWindow(4);
    const api = fakeExport({ perRun: 4, window });
    const pages = fetchExportPages(api.ctx, "run-1", 0, null);
    const first = pages.next();
    await tick();
    api.find(0).onThrottled?.();
    api.find(0).resolve(page(0, 200));
    await first;
    // 4 halved to 2, then one answer: the window is 2, so two pages are fetched ahead, not four.
    expect(api.open().map((r) => r.offset)).toEqual([10, 20]);
    api.find(10).resolve(page(10, 200));
    await pages.next();
    // Two answers at size 2 grow it to 3.
    expect(api.open().map((r) => r.offset)).toEqual([20, 30, 40]);
    api.find(20).resolve(page(20, 200));
    await pages.next();
    expect(api.open().map((r) => r.offset)).toEqual([30, 40, 50]);
    pages.close();
  });

  it("resumes from a checkpoint offset and stops at the last page", async () => {
    const api = fakeExport();
    const pages = fetchExportPages(api.ctx, "run-1", 30, null);
    const first = pages.next();
    await tick();
    api.find(30).resolve(page(30, 45));
    expect((await first)?.offset).toBe(30);
    expect(api.open().map((r) => r.offset)).toEqual([40]);
    api.find(40).resolve(page(40, 45));
    expect((await pages.next())?.page.page.next_offset).toBeNull();
    expect(await pages.next()).toBeUndefined();
    expect(await fetchExportPages(api.ctx, "run-1", null, null).next()).toBeUndefined();
  });
});
