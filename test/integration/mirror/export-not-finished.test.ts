/**
 * docs/reference/sync-semantics.md#one-trigger-per-mirror: the run list may show a run finished
 * before its export is ready (409 "not finished"). That run waits again, like an unfinished one,
 * and is ingested once its export answers; run_timeout_minutes still bounds the wait.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Simulator } from "../../../src/simulator/index.js";
import { pairs } from "../../helpers/mirror-db.js";
import { createHarness, expectedKeys, type Harness, visibleKeys } from "../../helpers/mirror-harness.js";

const EXPORT_ROUTE = "/sync-task/{sync_id}/export";
const EXPORT = `GET ${EXPORT_ROUTE}`;

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const notFinishedAnswers = (x: Harness) =>
  x.sim.requests.filter((r) => r.fault === "not-finished" && r.status === 409);

/** One user's 300 resources in pages of 100, fetched one at a time. */
const pagedHarness = {
  sim: { users: 1, docs: 300 },
  export: { page_size: 100, pages_ahead_per_run: 0 },
};

/** Once the first page has committed, the next `times` export requests answer "not finished". */
const notFinishedAfterFirstPage = (sim: Simulator, times: number) => {
  let injected = false;
  return (point: string) => {
    if (point !== "between-pages" || injected) return;
    injected = true;
    sim.faults.inject(EXPORT, { kind: "not-finished", times });
  };
};

describe("an export that answers 409 'not finished' for a run listed as finished", () => {
  it("waits for the run and ingests it: the pass succeeds and every pair advances", async () => {
    h = await createHarness({ sim: { docs: 30 } });
    h.sim.faults.inject(EXPORT, { kind: "not-finished", times: 4 });

    const summary = await h.sync();

    expect(summary.outcome).toBe("succeeded");
    expect(notFinishedAnswers(h)).toHaveLength(4);
    expect(summary.errors).toEqual([]);
    for (const user of h.sim.users) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
    const mirrored = pairs(h);
    expect(mirrored.length).toBeGreaterThan(0);
    expect(mirrored.filter((p) => p.watermark === null)).toEqual([]);
  });

  it("after some pages: the run waits, then its export resumes at the page after the last committed", async () => {
    h = await createHarness(pagedHarness);
    const sim = h.sim;

    const summary = await h.sync({}, { crashPoint: notFinishedAfterFirstPage(sim, 2) });

    expect(summary.outcome).toBe("succeeded");
    expect(notFinishedAnswers(h)).toHaveLength(2);
    const offsets = sim.requests.filter((r) => r.route === EXPORT_ROUTE).map((r) => r.query.offset);
    expect(offsets).toEqual(["0", "100", "100", "100", "200"]);
    for (const user of sim.users) expect(visibleKeys(h, user)).toEqual(expectedKeys(sim, user));
    expect(pairs(h).filter((p) => p.watermark === null)).toEqual([]);
  });

  it("gives up on it once run_timeout_minutes is reached, as on any run that never finishes", async () => {
    h = await createHarness({ sim: { users: 1, docs: 5 }, defaults: { run_timeout_minutes: 0.005 } });
    h.sim.faults.inject(EXPORT, { kind: "not-finished", times: Number.POSITIVE_INFINITY });

    const summary = await h.sync();

    expect(summary.outcome).toBe("failed");
    expect(summary.errors).toEqual([expect.objectContaining({ error: "run_timeout_minutes reached" })]);
    expect(notFinishedAnswers(h).length).toBeGreaterThan(0);
    expect(pairs(h).filter((p) => p.watermark !== null)).toEqual([]);
  });

  it("after some pages, forever: given up on at run_timeout_minutes with the pages it committed", async () => {
    h = await createHarness({ ...pagedHarness, defaults: { run_timeout_minutes: 0.005 } });

    const summary = await h.sync(
      {},
      { crashPoint: notFinishedAfterFirstPage(h.sim, Number.POSITIVE_INFINITY) },
    );

    expect(summary.outcome).toBe("partial");
    expect(summary.errors).toEqual([expect.objectContaining({ error: "run_timeout_minutes reached" })]);
    expect(h.query<{ n: number }>("SELECT count(*) AS n FROM resources")[0]?.n).toBe(100);
    expect(pairs(h).filter((p) => p.watermark !== null)).toEqual([]);
  });
});
