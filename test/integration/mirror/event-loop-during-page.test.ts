/**
 * Checking a page's rows is most of the CPU a page costs (its transaction then only looks states
 * up and writes). The ingest lets the event loop turn while it checks, so the daemon's HTTP
 * endpoints answer and the export pages fetched ahead are read off their sockets meanwhile.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("a page being checked", () => {
  it("lets work queued on the event loop at its first row run before its hundredth", async () => {
    h = await createHarness({ sim: { users: 1, docs: 300 } });
    let rows = 0;
    let queuedRan = false;
    let ranBeforeHundredth: boolean | undefined;
    const seam = (point: string) => {
      if (point !== "row-checked") return;
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
