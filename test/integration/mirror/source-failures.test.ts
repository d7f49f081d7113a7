/** docs/reference/sync-semantics.md#pairs-and-success: a source that does not succeed neither sweeps nor moves its watermark. */
import { afterEach, describe, expect, it } from "vitest";
import type { Outcome } from "../../../src/simulator/index.js";
import { accessRows, pairOf, pairs, pickDoc, runCreatedAtMs } from "../../helpers/mirror-db.js";
import { createHarness, expectedKeys, type Harness, visibleKeys } from "../../helpers/mirror-harness.js";

let h: Harness;
afterEach(async () => {
  await h?.close();
});

const U1 = "user1@example.com";

const FAILURES: [string, Outcome][] = [
  ["FAILED", { task: "FAILED" }],
  ["INCOMPLETE", { task: "INCOMPLETE" }],
  ["authentication_required", { task: "COMPLETED", exportStatus: "authentication_required" }],
  ["degraded", { task: "COMPLETED", exportStatus: "degraded" }],
  ["config_stale", { task: "COMPLETED", exportStatus: "config_stale" }],
];

describe("sources that do not succeed", () => {
  it.each(FAILURES)(
    "sweeps nothing, keeps the watermark and ends partial when a source ends %s",
    async (_, outcome) => {
      h = await createHarness({ sim: { docs: 30 }, defaults: { since_overlap_seconds: 60 } });
      const first = await h.sync();
      const firstCreatedMs = runCreatedAtMs(h, first.trigger_id);
      const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id ?? "";
      const watermark = pairOf(h, U1, notion)?.watermark;
      // A document U1 sees on that server disappears: only a succeeding source may sweep it away.
      const removed = pickDoc(h, (d) => d.server_instance_id === notion && d.visibleTo.includes(U1));
      h.sim.docs.remove(removed.docId);
      h.sim.setOutcome({ user: U1, server_instance_id: notion }, { ...outcome, times: 1 });

      const full = await h.sync({ full: true });
      expect(full.outcome).toBe("partial");
      expect(full.message).toMatch(/did not succeed/);
      expect(accessRows(h, removed.key).map((a) => a.user_email)).toContain(U1);
      expect(pairOf(h, U1, notion)?.watermark).toBe(watermark);
      const fullCreatedMs = runCreatedAtMs(h, full.trigger_id);
      for (const p of pairs(h).filter((p) => !(p.user_email === U1 && p.server_instance_id === notion)))
        expect(Date.parse(p.watermark ?? "")).toBe(fullCreatedMs);

      // The pair that did not succeed still holds `since` back to its own watermark.
      const next = await h.sync();
      expect(next).toMatchObject({ mode: "incremental", outcome: "succeeded" });
      expect(Date.parse(next.since ?? "")).toBe(firstCreatedMs - 60_000);
    },
  );

  it("upserts what a failing source's run delivered from its other sources", async () => {
    h = await createHarness({ sim: { docs: 30 } });
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id ?? "";
    h.sim.setOutcome({ user: U1, server_instance_id: notion }, { task: "FAILED", times: 1 });
    const s = await h.sync();
    expect(s.outcome).toBe("partial");
    expect(visibleKeys(h, U1)).toEqual(expectedKeys(h.sim, U1).filter((k) => !k.includes(notion)));
    expect(pairOf(h, U1, notion)).toMatchObject({ watermark: null, awaiting_baseline: 1 });
  });
});

describe("an export date-filtered though a full snapshot was asked for", () => {
  it("keeps what came, then fails its runs: nothing is swept, no watermark moves; the next full pass sweeps", async () => {
    h = await createHarness({ sim: { docs: 30 } });
    await h.sync();
    const watermarks = pairs(h).map((p) => p.watermark);
    const removed = pickDoc(h, (d) => d.visibleTo.length > 0);
    h.sim.docs.remove(removed.docId);
    h.sim.faults.inject("GET /sync-task/{sync_id}/export", {
      kind: "date-filtered",
      since: "2026-01-01T00:00:00Z",
      times: Infinity,
    });

    const full = await h.sync({ full: true });
    // Every run's rows were read (as unchanged), and every run failed.
    expect(full.outcome).toBe("partial");
    expect(full.counts.deleted).toBe(0);
    expect(full.errors.map((e) => e.error).join("\n")).toMatch(
      /date-filtered \(since 2026-01-01T00:00:00Z\)/,
    );
    expect(accessRows(h, removed.key).length).toBeGreaterThan(0);
    expect(pairs(h).map((p) => p.watermark)).toEqual(watermarks);

    h.sim.faults.clear();
    expect(await h.sync({ full: true })).toMatchObject({ outcome: "succeeded" });
    expect(accessRows(h, removed.key)).toEqual([]);
  });
});

describe("a pair that keeps failing", () => {
  it("stops holding since back once it lags the newest watermark by more than inaccessible_grace_hours", async () => {
    h = await createHarness({
      sim: { docs: 20 },
      defaults: { since_overlap_seconds: 0, inaccessible_grace_hours: 1 },
    });
    const first = await h.sync();
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id ?? "";
    h.sim.setOutcome({ user: U1, server_instance_id: notion }, { task: "FAILED" });

    const held = await h.sync();
    expect(Date.parse(held.since ?? "")).toBe(runCreatedAtMs(h, first.trigger_id));
    h.sim.clock.advance(2 * 3_600_000);
    const moved = await h.sync();
    expect(Date.parse(moved.since ?? "")).toBe(runCreatedAtMs(h, first.trigger_id));
    // That pass moved the newest watermark past the grace: the failing pair awaits a baseline
    // from now on, and says so at once rather than after one more pass.
    expect(moved.pairs_awaiting_baseline).toBe(1);
    expect(pairOf(h, U1, notion)?.awaiting_baseline).toBe(1);
    const next = await h.sync();
    expect(Date.parse(next.since ?? "")).toBe(runCreatedAtMs(h, moved.trigger_id));
    expect(next.pairs_awaiting_baseline).toBe(1);
    expect(pairOf(h, U1, notion)?.awaiting_baseline).toBe(1);
  });
});

describe("continue_incomplete", () => {
  it("continues an INCOMPLETE source and the source completes", async () => {
    h = await createHarness({ sim: { docs: 30 }, defaults: { continue_incomplete: 1 } });
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id ?? "";
    h.sim.setOutcome({ user: U1, server_instance_id: notion }, { task: "INCOMPLETE", times: 1 });

    const s = await h.sync();
    expect(s.outcome).toBe("succeeded");
    const continues = h.sim.requests.filter((r) => r.route === "/sync-task/{sync_id}/continue");
    expect(continues).toHaveLength(1);
    expect(continues[0]?.status).toBe(200);
    const run = h.sim.runs.list().find((r) => r.user_email === U1);
    expect(run?.status).toBe("completed");
    for (const user of h.sim.users) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
    expect(pairOf(h, U1, notion)?.watermark).not.toBeNull();
  });

  it("gives up after continue_incomplete follow-ups and keeps the pass partial", async () => {
    h = await createHarness({ sim: { docs: 30 }, defaults: { continue_incomplete: 2 } });
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id ?? "";
    h.sim.setOutcome({ user: U1, server_instance_id: notion }, { task: "INCOMPLETE" });

    const s = await h.sync();
    expect(s.outcome).toBe("partial");
    expect(h.sim.requests.filter((r) => r.route === "/sync-task/{sync_id}/continue")).toHaveLength(2);
    expect(pairOf(h, U1, notion)?.watermark).toBeNull();
  });
});
