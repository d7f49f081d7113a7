import { describe, expect, it } from "vitest";
import { decideOutcome, type PassFacts } from "../../src/sync/decide-outcome.js";

const clean: PassFacts = {
  anyRead: true,
  ingest: { rows: 120, runsWritten: 2, runsUnread: 0 },
  allSourcesSucceeded: true,
  timedOut: false,
  sweepsHeld: 0,
  leaversUnknown: false,
  runs: 2,
};

describe("decideOutcome (outcome and exit code)", () => {
  it("succeeds when every run was read and every source succeeded", () => {
    expect(decideOutcome(clean)).toEqual({ outcome: "succeeded", message: "2 run(s) ingested" });
  });

  it("fails only when nothing at all was ingested, saying why", () => {
    const nothing = { ...clean, anyRead: false, ingest: { rows: 0, runsWritten: 0, runsUnread: 2 } };
    expect(decideOutcome(nothing)).toMatchObject({ outcome: "failed", message: /no export could be read/ });
    expect(decideOutcome({ ...nothing, timedOut: true })).toMatchObject({
      outcome: "failed",
      message: /run_timeout_minutes/,
    });
    // The table prints the message alone: it carries the last run's error and what that says to do.
    expect(
      decideOutcome({ ...nothing, lastRunError: "GET export still failed: the next pass tries again" }),
    ).toEqual({
      outcome: "failed",
      message:
        "no export of 2 run(s) could be read; the last error: GET export still failed: the next pass tries again",
    });
  });

  it("is partial, counting what was and was not read, when pages were written before a run failed", () => {
    const halfway = { ...clean, anyRead: false, ingest: { rows: 500, runsWritten: 1, runsUnread: 2 } };
    const { outcome, message } = decideOutcome(halfway);
    expect(outcome).toBe("partial");
    expect(message).toContain("500 exported row(s) were ingested from 1 of 2 run(s)");
    expect(message).toContain("2 run(s) could not be read to the end");
  });

  it("is partial for a source that did not succeed, a held sweep, a timeout or an unknown leaver list", () => {
    const cases: [Partial<PassFacts>, RegExp][] = [
      [{ allSourcesSucceeded: false }, /sources did not succeed/],
      [{ sweepsHeld: 3 }, /held the sweep of 3 pair\(s\).*approve-sweep.*--allow-mass-delete/],
      [{ timedOut: true }, /did not finish within run_timeout_minutes/],
      [{ leaversUnknown: true }, /access check failed/],
    ];
    for (const [facts, message] of cases)
      expect(decideOutcome({ ...clean, ...facts })).toMatchObject({ outcome: "partial", message });
  });
});
