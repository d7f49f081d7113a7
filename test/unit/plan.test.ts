import { describe, expect, it } from "vitest";
import type { MirrorConfig } from "../../src/config.js";
import type { Pair } from "../../src/store/types.js";
import { planPass } from "../../src/sync/plan.js";

const mirror = { sinceOverlapSeconds: 300, inaccessibleGraceHours: 72 } as MirrorConfig;

function pair(user: string, watermark: string | null, extra: Partial<Pair> = {}): Pair {
  return {
    mirror: "m",
    userEmail: user,
    serverInstanceId: "s",
    watermark,
    firstSeenAt: watermark ?? "2026-11-01T00:00:00.000Z",
    awaitingBaseline: false,
    skipReason: null,
    authStatus: null,
    retiredAt: null,
    retiredReason: null,
    ...extra,
  };
}

describe("planPass", () => {
  it("sends no since for a mirror without pairs", () => {
    expect(planPass([], mirror, false)).toMatchObject({ mode: "full", since: null });
  });

  it("sends the oldest active watermark minus the overlap", () => {
    const plan = planPass(
      [pair("a", "2026-11-20T10:00:00.000Z"), pair("b", "2026-11-20T08:00:00.000Z")],
      mirror,
      false,
    );
    expect(plan).toMatchObject({ mode: "incremental", since: "2026-11-20T07:55:00.000Z" });
  });

  it("lets a pair older than the grace stop holding since back", () => {
    const plan = planPass(
      [pair("a", "2026-11-20T10:00:00.000Z"), pair("old", "2026-11-10T10:00:00.000Z")],
      mirror,
      false,
    );
    expect(plan.since).toBe("2026-11-20T09:55:00.000Z");
    expect(plan.stale.map((p) => p.userEmail)).toEqual(["old"]);
  });

  it("ignores retired pairs and pairs that never succeeded", () => {
    const plan = planPass(
      [
        pair("a", "2026-11-20T10:00:00.000Z"),
        pair("gone", "2026-11-19T10:00:00.000Z", { retiredAt: "2026-11-20T00:00:00.000Z" }),
        pair("new", null, { firstSeenAt: "2026-11-20T09:00:00.000Z" }),
      ],
      mirror,
      false,
    );
    expect(plan.since).toBe("2026-11-20T09:55:00.000Z");
  });

  it("sends no since when a full pass is asked for", () => {
    expect(planPass([pair("a", "2026-11-20T10:00:00.000Z")], mirror, true)).toMatchObject({
      mode: "full",
      since: null,
    });
  });
});
