import { describe, expect, it } from "vitest";
import type { Pair, PairRef, SkippedPairRecord } from "../../src/store/types.js";
import { decideLeavers, type LeaverFacts, type RunFact } from "../../src/sync/leavers.js";

const NOW = "2026-11-20T10:00:00.000Z";
const DAYS_AGO_4 = "2026-11-16T10:00:00.000Z";
const HOURS_AGO_1 = "2026-11-20T09:00:00.000Z";

const ref = (user: string, server = "notion-1"): PairRef => ({
  mirror: "m",
  userEmail: user,
  serverInstanceId: server,
});
const pair = (user: string, server: string, watermark: string | null): Pair => ({
  ...ref(user, server),
  watermark,
  firstSeenAt: watermark ?? DAYS_AGO_4,
  awaitingBaseline: false,
  skipReason: null,
  authStatus: null,
  retiredAt: null,
  retiredReason: null,
});
const ran = (user: string, servers: string[] = ["notion-1"]): RunFact => ({
  userEmail: user,
  read: true,
  servers,
  succeededAt: NOW,
});
const skip = (user: string, reason: string, server = "notion-1"): SkippedPairRecord => ({
  user_email: user,
  server_instance_id: server,
  reason,
});

function facts(f: Partial<LeaverFacts>): LeaverFacts {
  const skipped = f.skipped === undefined ? [] : f.skipped;
  return {
    mirror: "m",
    holding: [],
    skipped,
    skippedCount: skipped?.length ?? 0,
    checked: null,
    runs: [],
    pairs: [],
    graceHours: 72,
    ...f,
  };
}

describe("decideLeavers (users who left)", () => {
  it("takes every pair of a user the trigger skipped as not_a_project_user", () => {
    const leaving = decideLeavers(
      facts({
        holding: [ref("gone", "notion-1"), ref("gone", "github-1"), ref("stays")],
        skipped: [skip("gone", "not_a_project_user")],
        runs: [ran("stays")],
      }),
    );
    expect(leaving).toEqual([
      { pair: ref("gone", "notion-1"), reason: "left" },
      { pair: ref("gone", "github-1"), reason: "left" },
    ]);
  });

  it("retires the pairs of a user skipped as not_a_project_user that the mirror has no row for yet", () => {
    const leaving = decideLeavers(
      facts({
        skipped: [
          skip("gone", "not_a_project_user", "notion-1"),
          skip("gone", "not_a_project_user", "github-1"),
          skip("away", "not_accessible"),
          skip("retired", "not_a_project_user"),
        ],
        pairs: [{ ...pair("retired", "notion-1", null), retiredAt: DAYS_AGO_4, retiredReason: "left" }],
        runs: [ran("stays")],
      }),
    );
    expect(leaving).toEqual([
      { pair: ref("gone", "notion-1"), reason: "left" },
      { pair: ref("gone", "github-1"), reason: "left" },
    ]);
  });

  it("takes the access of a user no longer in the trigger at all", () => {
    const leaving = decideLeavers(facts({ holding: [ref("vanished"), ref("a")], runs: [ran("a")] }));
    expect(leaving).toEqual([{ pair: ref("vanished"), reason: "left" }]);
  });

  it("removes a pair whose server left a complete trigger while the user ran on another", () => {
    const f = facts({
      holding: [ref("a", "notion-1"), ref("a", "github-1")],
      runs: [ran("a", ["notion-1"])],
    });
    expect(decideLeavers(f)).toEqual([{ pair: ref("a", "github-1"), reason: "removed" }]);
  });

  it("with an incomplete skipped list, removes a pair only when the access check no longer lists its server", () => {
    const f = facts({
      holding: [ref("a", "notion-1"), ref("a", "github-1")],
      skipped: [],
      skippedCount: 150,
      checked: [
        { userEmail: "a", projectUser: true, servers: ["notion-1", "github-1"], inaccessibleServers: [] },
      ],
      runs: [ran("a", ["notion-1"])],
    });
    expect(decideLeavers(f)).toEqual([]);
    const gone = facts({
      ...f,
      checked: [{ userEmail: "a", projectUser: true, servers: ["notion-1"], inaccessibleServers: [] }],
    });
    expect(decideLeavers(gone)).toEqual([{ pair: ref("a", "github-1"), reason: "removed" }]);
    const ranThere = facts({ ...gone, runs: [ran("a", ["notion-1", "github-1"])] });
    expect(decideLeavers(ranThere)).toEqual([]);
  });

  it("when the access check failed, nobody leaves and nothing is removed, but a listed pair past its grace loses its access", () => {
    const f = facts({
      holding: [ref("gone"), ref("vanished"), ref("stale"), ref("a", "github-1")],
      skipped: [skip("gone", "not_a_project_user"), skip("stale", "not_accessible")],
      skippedCount: 150,
      checked: "failed",
      runs: [ran("a", ["notion-1"])],
      pairs: [pair("stale", "notion-1", DAYS_AGO_4)],
    });
    expect(decideLeavers(f)).toEqual([{ pair: ref("stale"), reason: "inaccessible" }]);
  });

  it("decides the pairs that hold no access too, so that a pair that left is retired", () => {
    const f = facts({
      holding: [ref("a")],
      skipped: [skip("gone", "not_a_project_user")],
      runs: [ran("a")],
      pairs: [
        pair("a", "notion-1", HOURS_AGO_1),
        pair("gone", "notion-1", HOURS_AGO_1),
        pair("vanished", "github-1", HOURS_AGO_1),
        { ...pair("retired", "notion-1", HOURS_AGO_1), retiredAt: HOURS_AGO_1, retiredReason: "left" },
      ],
    });
    expect(decideLeavers(f)).toEqual([
      { pair: ref("gone"), reason: "left" },
      { pair: ref("vanished", "github-1"), reason: "left" },
    ]);
  });

  it("keeps a not_accessible pair within its grace and takes it past the grace (fail closed)", () => {
    const holding = [ref("fresh"), ref("stale")];
    const f = facts({
      holding,
      skipped: [skip("fresh", "not_accessible"), skip("stale", "not_syncable")],
      runs: [ran("other")],
      pairs: [pair("fresh", "notion-1", HOURS_AGO_1), pair("stale", "notion-1", DAYS_AGO_4)],
    });
    expect(decideLeavers(f)).toEqual([{ pair: ref("stale"), reason: "inaccessible" }]);
  });

  it("measures the grace from this snapshot's time even before it is recorded", () => {
    const f = facts({
      holding: [ref("stale")],
      skipped: [skip("stale", "not_accessible")],
      runs: [ran("other")],
      pairs: [pair("stale", "notion-1", DAYS_AGO_4)],
    });
    expect(decideLeavers(f)).toEqual([{ pair: ref("stale"), reason: "inaccessible" }]);
    const unread = facts({ ...f, runs: [{ ...ran("other"), succeededAt: null }] });
    expect(decideLeavers(unread)).toEqual([]);
  });

  it("asks the access check when the list is incomplete: non-project users leave, inaccessible servers count as skipped", () => {
    const f = facts({
      holding: [ref("left"), ref("locked"), ref("fine")],
      skipped: null,
      checked: [
        { userEmail: "left", projectUser: false, servers: ["notion-1"], inaccessibleServers: [] },
        { userEmail: "locked", projectUser: true, servers: ["notion-1"], inaccessibleServers: ["notion-1"] },
        { userEmail: "fine", projectUser: true, servers: ["notion-1"], inaccessibleServers: [] },
      ],
      runs: [ran("fine")],
      pairs: [pair("locked", "notion-1", DAYS_AGO_4)],
    });
    expect(decideLeavers(f)).toEqual([
      { pair: ref("left"), reason: "left" },
      { pair: ref("locked"), reason: "inaccessible" },
    ]);
  });

  it("never takes the access of a user whose runs were read and who is still in the project", () => {
    const f = facts({
      holding: [ref("a")],
      skipped: [skip("a", "not_accessible", "github-1")],
      runs: [ran("a")],
    });
    expect(decideLeavers(f)).toEqual([]);
  });
});
