/**
 * A page is one transaction, and on SQLite none of its statements waits for I/O. The ingest still
 * lets the event loop turn during a page, so the daemon's HTTP endpoints answer and the export
 * pages fetched ahead are read off their sockets while a large page is written.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("a page being ingested", () => {
  it("lets work queued on the event loop at its first row run before its hundredth", async () => {
    h = await createHarness({ sim: { users: 1, docs: 300 } });
    let rows = 0;
    let queuedRan = false;
    let ranBeforeHundredth: boolean | undefined;
    const seam = (point: string) => {
      if (point !== "mid-page") return;
      rows++;
      if (rows === 1) setImmediate(() => (queuedRan = true));
      if (rows === 100) ranBeforeHundredth = queuedRan;
    };

    const summary = await h.sync({}, { crashPoint: seam });
    expect(summary.outcome).toBe("succeeded");
    expect(rows).toBe(300);
    expect(ranBeforeHundredth).toBe(true);
  });
});
