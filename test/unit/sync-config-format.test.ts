import { describe, expect, it } from "vitest";
import { formatPlan } from "../../src/sync-configs/format.js";
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
});
