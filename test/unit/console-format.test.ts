/**
 * `syncmirror history` without `--json` (docs/console-history.md): each pass's block says every
 * field SPEC's history lists, including when it ended and which replica met each error.
 */
import { describe, expect, it } from "vitest";
import { formatHistory } from "../../src/console/format.js";
import { donePass, inFlightPass } from "../helpers/pass-fixtures.js";

describe("history as text", () => {
  it("says when each pass started and ended, where it ran, and where each error was met", () => {
    const text = formatHistory(
      { passes: [inFlightPass, donePass], next_before: 6, pending_sweep_approvals: [] },
      (before) => `syncmirror history --before ${before}`,
    );
    const [running, done] = text.split(/\n(?=#)/);
    expect(running).toMatch(/^#8 eng-wiki full: in flight \(started 2026-11-25T19:03:10.419Z, not ended\)$/m);
    expect(done).toMatch(
      /^#7 eng-wiki incremental: partial \(started 2026-11-25T19:03:10.419Z, ended 2026-11-25T19:04:12.840Z, 62.4 s\)$/m,
    );
    expect(done).toContain(
      `trigger ${donePass.trigger_id}, since ${donePass.since}, on vm-a:5275, finished on vm-b:812`,
    );
    expect(running, "a pass in flight has not finished anywhere").not.toContain("finished on");
    expect(done).toContain(
      "runs: 2 completed, 1 failed; sources: 3 ok, 2 no_results; skipped: 1 not_accessible",
    );
    expect(done).toContain("  error 2026-11-25T19:03:11.000Z on vm-a:5275: connect ECONNREFUSED 127.0.0.1:1");
    expect(done).toContain(
      "  error 2026-11-25T19:04:12.828Z [e05e8972-6951-48f8-9dc7-6c336ae00c97 user1@example.com notion] on vm-b:812: FAILED: Notion API answered 502 Bad Gateway",
    );
    expect(text.trimEnd().split("\n").at(-1)).toBe("older passes: syncmirror history --before 6");
  });
});
