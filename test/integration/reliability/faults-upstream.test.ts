/**
 * Upstream refusals and disappearances: the trigger answered 400 / 409 / premium off, a run that
 * vanishes (404) mid-pass, the remote sync config deleted. Each ends in a clear outcome that names
 * the cause and the next step; nothing already mirrored is lost, and once upstream is fixed the
 * next pass reaches the state a clean run does.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { exitCodeFor } from "../../../src/sync/outcome.js";
import { databaseProblems, snapshot, snapshotDiff } from "../../helpers/db-snapshot.js";
import type { Harness } from "../../helpers/mirror-harness.js";
import { expectedKeys, visibleKeys } from "../../helpers/mirror-harness.js";
import { triggerPosts } from "../../helpers/requests.js";
import { counterValue, createTwins, type Twins } from "../../helpers/twins.js";

let twins: Twins | undefined;
afterEach(async () => {
  await twins?.close();
  twins = undefined;
});

interface RefusalCase {
  name: string;
  refuse: (h: Harness) => void;
  allow: (h: Harness) => void;
  outcome: "refused" | "failed";
  says: RegExp;
}

const pauseAll = (h: Harness, available: boolean) => {
  for (const s of h.sim.servers)
    h.sim.configs.setServerAvailable(h.sim.syncConfigId, s.server_instance_id, available);
};

const REFUSALS: RefusalCase[] = [
  {
    name: "trigger 400 (no user can reach any server)",
    refuse: (h) => pauseAll(h, false),
    allow: (h) => pauseAll(h, true),
    outcome: "refused",
    says: /trigger refused: POST \/sync-task was refused as invalid \(400: no user of this sync config can reach any of its servers\): fix the remote sync config/,
  },
  {
    name: "trigger 409 (the service cannot start it)",
    refuse: (h) => h.sim.setCannotStart("a sync of this config is already running"),
    allow: (h) => h.sim.setCannotStart(null),
    outcome: "refused",
    says: /the service cannot start the sync \(409: a sync of this config is already running\): nothing was started; resolve what the service says, then sync again/,
  },
  {
    name: "Background Sync (premium) turned off",
    refuse: (h) => h.sim.setPremium(false),
    allow: (h) => h.sim.setPremium(true),
    outcome: "refused",
    says: /Background Sync is turned off for this tenant .*turn on Background Sync under Administration > Premium Features/,
  },
  {
    name: "Background Sync (premium) turned off, answered 409",
    refuse: (h) => h.sim.setPremium(false, { status: 409 }),
    allow: (h) => h.sim.setPremium(true),
    outcome: "refused",
    says: /Background Sync is turned off for this tenant \(409 on POST \/sync-task.*turn on Background Sync under Administration > Premium Features/,
  },
];

describe("trigger refusals", () => {
  it.each(REFUSALS)(
    "$name: outcome $outcome, exit 1, mirror untouched; the next pass after the fix recovers",
    async (c) => {
      twins = await createTwins({ sim: { docs: 30 } });
      const { clean, hurt } = twins;
      expect((await hurt.sync()).outcome).toBe("succeeded");
      expect((await clean.sync()).outcome).toBe("succeeded");
      const before = snapshot(hurt);
      c.refuse(hurt);

      const r = await hurt.cli(["sync", "--json"]);
      expect(r.code).toBe(1);
      const summary = JSON.parse(r.stdout).mirrors[0];
      expect(summary.outcome).toBe(c.outcome);
      expect(summary.message).toMatch(c.says);
      expect(
        hurt.query("SELECT 1 FROM triggers WHERE state != 'done'"),
        "a refusal closes the trigger",
      ).toEqual([]);
      expect(snapshotDiff(snapshot(hurt), before)).toEqual([]);

      c.allow(hurt);
      expect((await hurt.sync()).outcome).toBe("succeeded");
      expect((await clean.sync()).outcome).toBe("succeeded");
      expect(snapshotDiff(snapshot(hurt), snapshot(clean))).toEqual([]);
    },
  );

  it('counts a refusal in syncmirror_triggers_total{outcome="refused"}', async () => {
    twins = await createTwins({ sim: { docs: 5 } });
    twins.hurt.sim.setPremium(false);
    expect((await twins.hurt.sync()).outcome).toBe("refused");
    expect(await counterValue(twins.hurt.metrics.triggers, { mirror: "main", outcome: "refused" })).toBe(1);
  });
});

describe("things that vanish upstream", () => {
  it("a run deleted mid-pass (404): its pairs do not advance, the others are ingested; a full pass recovers", async () => {
    twins = await createTwins({ sim: { docs: 40 } });
    const { hurt } = twins;
    hurt.sim.runs.hold();
    const pass = hurt.sync();
    await vi.waitFor(() => expect(hurt.sim.runs.list()).toHaveLength(3), { timeout: 30_000, interval: 10 });
    const gone = hurt.sim.runs.list().find((r) => r.user_email === "user2@example.com");
    hurt.sim.runs.remove(gone?.sync_id as string);
    hurt.sim.runs.release();

    const summary = await pass;
    expect(summary.outcome).toBe("partial");
    expect(exitCodeFor([summary.outcome])).toBe(1);
    expect(summary.errors).toEqual([
      {
        sync_id: gone?.sync_id,
        user_email: "user2@example.com",
        error: "the run no longer exists upstream (404)",
        at: expect.any(String),
        source: null,
        replica: null,
      },
    ]);
    expect(
      hurt.query("SELECT user_email FROM pairs WHERE watermark IS NOT NULL GROUP BY user_email"),
    ).toEqual([{ user_email: "user1@example.com" }, { user_email: "user3@example.com" }]);
    expect(visibleKeys(hurt, "user2@example.com")).toEqual([]);
    expect(databaseProblems(hurt)).toEqual([]);

    expect((await hurt.sync({ full: true })).outcome).toBe("succeeded");
    for (const user of hurt.sim.users) expect(visibleKeys(hurt, user)).toEqual(expectedKeys(hurt.sim, user));
    expect(databaseProblems(hurt)).toEqual([]);
  });

  it("the remote sync config deleted: failed naming mirrors[].sync_config_id, nothing revoked or deleted", async () => {
    twins = await createTwins({ sim: { docs: 30 } });
    const { hurt } = twins;
    expect((await hurt.sync()).outcome).toBe("succeeded");
    const before = snapshot(hurt);
    hurt.sim.configs.remove(hurt.sim.syncConfigId);

    for (const args of [["sync"], ["sync", "--full"]]) {
      const r = await hurt.cli([...args, "--json"]);
      expect(r.code).toBe(1);
      const summary = JSON.parse(r.stdout).mirrors[0];
      expect(summary.outcome).toBe("failed");
      expect(summary.message).toBe(
        `sync config ${hurt.sim.syncConfigId} was not found upstream: check mirrors[].sync_config_id for main`,
      );
    }
    expect(triggerPosts(hurt)).toBe(3);
    expect(hurt.query("SELECT 1 FROM triggers WHERE state != 'done'")).toEqual([]);
    expect(snapshotDiff(snapshot(hurt), before)).toEqual([]);
  });

  it("the remote sync config deleted while its runs run: their exports stay readable and are ingested", async () => {
    twins = await createTwins({ sim: { docs: 30 } });
    const { clean, hurt } = twins;
    hurt.sim.runs.hold();
    const pass = hurt.sync();
    await vi.waitFor(() => expect(triggerPosts(hurt)).toBe(1), { timeout: 30_000, interval: 10 });
    hurt.sim.configs.remove(hurt.sim.syncConfigId);
    hurt.sim.runs.release();
    expect((await pass).outcome).toBe("succeeded");
    expect((await clean.sync()).outcome).toBe("succeeded");
    expect(snapshotDiff(snapshot(hurt), snapshot(clean))).toEqual([]);
  });
});
