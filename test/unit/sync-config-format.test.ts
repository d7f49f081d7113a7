import { describe, expect, it } from "vitest";
import { formatApply, formatPlan } from "../../src/sync-configs/format.js";
import { emptyEntry, type PlanEntry } from "../../src/sync-configs/plan.js";

const forget = (name: string | null, syncConfigId: string | null): PlanEntry => ({
  ...emptyEntry("gone", "forget"),
  name,
  syncConfigId,
});

describe("plan's text", () => {
  it("names a record whose apply was refused as such, not as a config called null", () => {
    const text = formatPlan([forget(null, null)]);
    expect(text).toContain(
      "mirror gone: forget sync config record (never applied): syncmirror stops tracking it",
    );
    expect(text).not.toContain("null");
  });

  it("names a config that was applied by its name and id", () => {
    expect(formatPlan([forget("Team wiki", "cfg-1")])).toContain('forget sync config "Team wiki" (cfg-1)');
  });

  it("shows the service's control characters as \\xHH: a remote name or instructions cannot drive the terminal", () => {
    const entry: PlanEntry = {
      ...emptyEntry("wiki", "replace"),
      name: "Wiki\u001b[2J",
      syncConfigId: "cfg-1",
      changes: [{ field: "instructions", from: "old\u001b]0;owned\u0007\nline two", to: "new" }],
    };
    const text = formatPlan([entry]);
    expect(text).toContain('replace sync config "Wiki\\x1b[2J" (cfg-1)');
    expect(text).toContain("      - old\\x1b]0;owned\\x07");
    expect(text.replaceAll("\n", "")).not.toMatch(/\p{Cc}/u);
    const applied = formatApply([
      {
        mirror: "wiki",
        done: "refused",
        message: "the service said \u001b[31mno",
        syncConfigId: null,
        fullOwed: false,
      },
    ]);
    expect(applied).toContain("REFUSED the service said \\x1b[31mno");
  });
});
