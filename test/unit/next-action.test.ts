import { describe, expect, it } from "vitest";
import { nextAction, type RunSituation } from "../../src/sync/next-action.js";
import { storedRun } from "../helpers/store-fixtures.js";

const run = storedRun;

const free: RunSituation = {
  listed: true,
  exporting: false,
  slotFree: true,
  continueIncomplete: 1,
  beforeDeadline: true,
};

describe("nextAction (a run is exported as soon as it finishes)", () => {
  it("leaves a run alone until it finishes", () => {
    expect(nextAction(run({ status: "running" }), free)).toBe("none");
    expect(nextAction(run({ status: "pending" }), free)).toBe("none");
  });

  it("exports a finished run at once, or waits for a free slot", () => {
    for (const status of ["completed", "failed"]) expect(nextAction(run({ status }), free)).toBe("export");
    expect(nextAction(run({}), { ...free, slotFree: false })).toBe("wait-for-slot");
  });

  it("resumes an export left half-read, but never starts one already under way or done", () => {
    expect(nextAction(run({ ingest: "ingesting", nextOffset: 500 }), free)).toBe("export");
    expect(nextAction(run({}), { ...free, exporting: true })).toBe("none");
    expect(nextAction(run({ ingest: "done" }), free)).toBe("none");
    expect(nextAction(run({ ingest: "failed" }), free)).toBe("none");
  });

  it("continues an INCOMPLETE run while continues are left and the deadline is ahead, then exports it", () => {
    const incomplete = run({ status: "incomplete" });
    expect(nextAction(incomplete, free)).toBe("continue");
    expect(nextAction(run({ status: "incomplete", continuesSent: 1 }), free)).toBe("export");
    expect(nextAction(incomplete, { ...free, continueIncomplete: 0 })).toBe("export");
    expect(nextAction(incomplete, { ...free, beforeDeadline: false })).toBe("export");
  });

  it("settles a continue counted before a crash before deciding anything else", () => {
    const pending = run({ status: "incomplete", continuesSent: 1, continuePending: { notion: null } });
    expect(nextAction(pending, free)).toBe("settle-continue");
    expect(nextAction(pending, { ...free, beforeDeadline: false })).toBe("settle-continue");
  });

  it("does not continue a run the latest listing did not show (its sources are unknown)", () => {
    expect(nextAction(run({ status: "incomplete" }), { ...free, listed: false })).toBe("export");
  });
});
