/** `syncmirror_runs_total` counts each finished upstream run once, whether or not its export could be read. */
import { afterEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function runsByStatus(harness: Harness): Promise<Record<string, number>> {
  const metric = await harness.metrics.runs.get();
  return Object.fromEntries(metric.values.map((v) => [String(v.labels.status), v.value]));
}

describe("syncmirror_runs_total", () => {
  it("counts a finished run whose export could not be read, once", async () => {
    h = await createHarness({ sim: { users: 2, docs: 10 }, maxAttempts: 2 });
    h.sim.faults.inject("GET /sync-task/{sync_id}/export", { kind: "500", times: Number.POSITIVE_INFINITY });
    const failed = await h.sync();
    expect(failed.outcome).toBe("failed"); // nothing could be ingested
    expect(await runsByStatus(h)).toMatchObject({ completed: 2 });

    h.sim.faults.clear();
    const next = await h.sync();
    expect(next.outcome).toBe("succeeded");
    expect(await runsByStatus(h)).toMatchObject({ completed: 4 });
  });
});
