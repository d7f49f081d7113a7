/**
 * SPEC "Metrics": `syncmirror_resources_upserted_total` counts resources written to the mirror. A
 * page whose transaction fails rolls back and is read again by the next pass: its rows are
 * counted once, when they commit, not once per attempt.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const counted = async (harness: Harness, name: string) =>
  ((await harness.metrics.registry.getSingleMetric(name)?.get())?.values ?? []).reduce(
    (n, v) => n + v.value,
    0,
  );

describe("row counters", () => {
  it("count a page that rolled back and was read again once", async () => {
    h = await createHarness({ sim: { users: 1, docs: 1200 }, maxAttempts: 1 });
    let rows = 0;
    const failMidSecondPage = (point: string) => {
      if (point === "mid-page" && ++rows === 600) throw new Error("the page transaction failed");
    };

    const first = await h.sync({}, { crashPoint: failMidSecondPage });
    expect(first.outcome).toBe("partial");
    expect(h.query<{ n: number }>("SELECT count(*) AS n FROM resources")[0]?.n).toBe(500);
    expect(await counted(h, "syncmirror_resources_upserted_total")).toBe(500);

    const second = await h.sync();
    expect(second.outcome).toBe("succeeded");
    expect(h.query<{ n: number }>("SELECT count(*) AS n FROM resources")[0]?.n).toBe(1200);
    expect(await counted(h, "syncmirror_resources_upserted_total")).toBe(1200);
  });
});
