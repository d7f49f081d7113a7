/**
 * Pipelined export paging (src/sync/export-pages.ts): pages fetched ahead are applied strictly in
 * export order, a kill -9 with pages in flight resumes at the checkpoint, and 429s shrink how many
 * pages are fetched ahead. One user and two servers, so one run of 3,000 resources in 6 pages.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createPageWindow, type PageWindow } from "../../../src/sync/page-window.js";
import { databaseProblems, snapshot, snapshotDiff } from "../../helpers/db-snapshot.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { answered, triggerPosts } from "../../helpers/requests.js";
import { CLOCK_START, createTwins, type Twins } from "../../helpers/twins.js";

const EXPORT = "GET /sync-task/{sync_id}/export";
const SIM = { docs: 3000, users: 1 };

let twins: Twins | undefined;
afterEach(async () => {
  await twins?.close();
  twins = undefined;
});

const exportRequests = (h: Harness) => h.sim.requests.filter((r) => `${r.method} ${r.route}` === EXPORT);
const changeFeed = (h: Harness) =>
  h.query<{ key: string; op: string }>("SELECT key, op FROM changes ORDER BY seq");

describe("pipelined export paging", () => {
  it("applies pages in export order when later pages are answered first", async () => {
    const twinSim = { ...SIM, seed: 7, clock: { start: CLOCK_START } };
    // The reference reads one page at a time.
    const reference = await createHarness({
      sim: twinSim,
      export: { pages_ahead_per_run: 0, pages_ahead_per_pass: 0 },
    });
    const pipelined = await createHarness({ sim: twinSim });
    twins = {
      clean: reference,
      hurt: pipelined,
      close: async () => {
        await reference.close();
        await pipelined.close();
      },
    };
    // The first page is answered at once; the next page to arrive is held while later ones are answered.
    pipelined.sim.faults.inject(EXPORT, { kind: "delay", ms: 0 });
    pipelined.sim.faults.inject(EXPORT, { kind: "delay", ms: 300 });

    expect((await reference.sync()).outcome).toBe("succeeded");
    expect((await pipelined.sync()).outcome).toBe("succeeded");

    const held = exportRequests(pipelined).find((r) => r.fault === "delay" && r.query.offset !== "0");
    expect(Number(held?.query.offset)).toBeGreaterThan(0);
    expect(Math.max(...exportRequests(pipelined).map((r) => r.inFlight))).toBeGreaterThan(1);
    expect(Math.max(...exportRequests(reference).map((r) => r.inFlight))).toBe(1);
    // The change feed lists keys in the order a one-page-at-a-time mirror records them.
    expect(changeFeed(pipelined)).toEqual(changeFeed(reference));
    expect(snapshotDiff(snapshot(pipelined), snapshot(reference))).toEqual([]);
  });

  it("resumes at the checkpoint after a kill -9 with pages in flight, as if never killed", async () => {
    // Latency keeps the pages fetched ahead unanswered when the process dies.
    twins = await createTwins({ sim: { ...SIM, latencyMs: 50 } });
    const { clean, hurt } = twins;
    expect((await clean.sync()).outcome).toBe("succeeded");

    const crashed = await hurt.cli(["sync"], { SYNCMIRROR_CRASH_AT: "between-pages:2" });
    expect(crashed.code, crashed.stderr).toBeNull();
    expect(databaseProblems(hurt)).toEqual([]);
    const [checkpoint] = hurt.query<{ next_offset: number }>("SELECT next_offset FROM runs");
    expect(checkpoint?.next_offset).toBe(500);
    const requestedBeforeKill = exportRequests(hurt).map((r) => Number(r.query.offset));
    expect(requestedBeforeKill.filter((offset) => offset > 500).length).toBeGreaterThanOrEqual(2);

    const resumed = await hurt.cli(["sync"]);
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    // Requests the killed process had already written may reach the simulator after it died; those
    // are pages ahead of the checkpoint. Nothing before the checkpoint is read again.
    const afterKill = exportRequests(hurt)
      .slice(requestedBeforeKill.length)
      .map((r) => Number(r.query.offset));
    expect(afterKill.filter((offset) => offset < 500)).toEqual([]);
    expect(afterKill).toContain(500);
    expect(triggerPosts(hurt)).toBe(1);
    expect(databaseProblems(hurt)).toEqual([]);
    expect(snapshotDiff(snapshot(hurt), snapshot(clean))).toEqual([]);
  });

  it("halves the pass's window at each 429 on an export page, reads each page once, ends clean", async () => {
    twins = await createTwins({ sim: { ...SIM, latencyMs: 20 }, maxAttempts: 6 });
    const { clean, hurt } = twins;
    // Three 429s on the first page (nothing is fetched ahead before it) halve the default window of
    // 4 pages ahead to 2, 1, then 0.
    hurt.sim.faults.inject(EXPORT, { kind: "429", retryAfterSeconds: 0, times: 3 });
    const window = createPageWindow(4);
    const sizesAfterThrottle: number[] = [];
    const watched: PageWindow = {
      tryTake: () => window.tryTake(),
      give: () => window.give(),
      runOpened: () => window.runOpened(),
      runClosed: () => window.runClosed(),
      answered: () => window.answered(),
      throttled: () => {
        window.throttled();
        sizesAfterThrottle.push(window.size);
      },
      get size() {
        return window.size;
      },
      get taken() {
        return window.taken;
      },
    };

    expect((await clean.sync()).outcome).toBe("succeeded");
    const summary = await hurt.sync({}, { pagesAhead: watched });
    expect(summary.outcome, summary.message).toBe("succeeded");

    expect(answered(hurt, EXPORT, 429)).toBe(3);
    expect(sizesAfterThrottle).toEqual([2, 1, 0]);
    // How far the window has grown back when each page goes out depends on when answers arrive
    // (the growth is pinned in test/unit/sync/page-window.test.ts); each page is read once.
    const pages = exportRequests(hurt)
      .filter((r) => r.status === 200)
      .map((r) => Number(r.query.offset));
    expect(pages.sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, i) => i * 250));
    expect(snapshotDiff(snapshot(hurt), snapshot(clean))).toEqual([]);
  });
});
