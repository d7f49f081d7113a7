/**
 * `status --json` and `status` through the built CLI, value by value, against the simulator's
 * server clock: nothing synced yet, the since the next trigger sends (the oldest active watermark
 * minus `since_overlap_seconds`, a pair past `inaccessible_grace_hours` no longer holding it back),
 * and a pass killed mid-export left in flight with its trigger and runs.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { MirrorStatus } from "../../../src/sync/status-report.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { buildOnce } from "../daemon/setup.js";

let h: Harness | undefined;
beforeAll(buildOnce);
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const OVERLAP_SECONDS = 120;
const GRACE_HOURS = 2;

async function statusOfMain(harness: Harness): Promise<MirrorStatus> {
  const { code, stdout, stderr } = await harness.cli(["status", "--json"]);
  expect(code, stderr).toBe(0);
  return (JSON.parse(stdout) as { mirrors: MirrorStatus[] }).mirrors[0] as MirrorStatus;
}

/** Server `created_at` (ms) of each user's run of the newest trigger. */
function newestRunTimes(harness: Harness): Map<string, number> {
  const runs = harness.sim.runs.list();
  const triggerId = runs[0]?.trigger_id;
  return new Map(
    runs.filter((r) => r.trigger_id === triggerId).map((r) => [r.user_email, Date.parse(r.created_at)]),
  );
}

/** The `since` the newest trigger POST carried (null when it sent none). */
function sentSince(harness: Harness): string | null {
  const post = harness.sim.runs.list()[0];
  return post?.since ?? null;
}

const minus = (ms: number, seconds: number) => new Date(ms - seconds * 1000).toISOString();

describe("status: what the next trigger would send", () => {
  it("shows a mirror that never synced, exit 0, as text and JSON", async () => {
    h = await createHarness();
    expect(await statusOfMain(h)).toMatchObject({
      last_incremental_success_at: null,
      last_full_success_at: null,
      next_mode: "full",
      next_since: null,
      in_flight: null,
      live_resources: 0,
      pairs_awaiting_baseline: 0,
    });
    const text = await h.cli(["status"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/last incremental success: +never/);
    expect(text.stdout).toMatch(/last full success: +never/);
    expect(text.stdout).toMatch(/next trigger: +full \(no since\)/);
    expect(text.stdout).toMatch(/live resources: +0/);
  });

  it("is the oldest active watermark minus the overlap, and a pair past the grace stops holding it back", async () => {
    h = await createHarness({
      sim: { docs: 20 },
      defaults: { since_overlap_seconds: OVERLAP_SECONDS, inaccessible_grace_hours: GRACE_HOURS },
    });
    const [lagging] = h.sim.users;
    const server = h.sim.servers[0];
    if (!lagging || !server) throw new Error("the simulator has no user or server");

    expect((await h.sync()).outcome).toBe("succeeded");
    const first = newestRunTimes(h);
    const oldest = Math.min(...first.values());
    const afterFull = await statusOfMain(h);
    expect(afterFull).toMatchObject({
      next_mode: "incremental",
      next_since: minus(oldest, OVERLAP_SECONDS),
      pairs_awaiting_baseline: 0,
    });
    expect(afterFull.last_full_success_at).not.toBeNull();
    expect(afterFull.last_incremental_success_at).toBeNull();

    // One pair fails from now on: its watermark stays at the full's run, the others move on.
    h.sim.setOutcome({ user: lagging, server_instance_id: server.server_instance_id }, { task: "FAILED" });
    h.sim.clock.advance(30 * 60_000);
    const partial = await h.sync();
    expect(partial).toMatchObject({ mode: "incremental", outcome: "partial" });
    expect(Date.parse(sentSince(h) as string)).toBe(Date.parse(afterFull.next_since as string));
    const held = await statusOfMain(h);
    expect(held.next_since).toBe(minus(first.get(lagging) as number, OVERLAP_SECONDS));
    expect(held.last_incremental_success_at).toBeNull();

    // Past the grace behind the newest watermark, the failing pair no longer holds since back.
    h.sim.clock.advance(GRACE_HOURS * 3_600_000);
    await h.sync();
    const moved = newestRunTimes(h);
    const past = await statusOfMain(h);
    expect(past).toMatchObject({ next_mode: "incremental", pairs_awaiting_baseline: 1 });
    expect(past.next_since).toBe(minus(Math.min(...moved.values()), OVERLAP_SECONDS));

    await h.sync();
    expect(Date.parse(sentSince(h) as string)).toBe(Date.parse(past.next_since as string));
  });

  it("shows a pass killed mid-export in flight with its trigger and runs, and the same in text", async () => {
    h = await createHarness({ sim: { docs: 1000 } });
    const crashed = await h.cli(["sync"], { SYNCMIRROR_CRASH_AT: "between-pages:1" });
    expect(crashed.code, crashed.stderr).toBeNull();
    const runs = h.sim.runs.list();
    const triggerId = runs[0]?.trigger_id;
    const status = await statusOfMain(h);
    expect(status.in_flight).toMatchObject({ trigger_id: triggerId, mode: "full", since: null });
    expect(status.in_flight?.runs.map((r) => [r.sync_id, r.user_email]).sort()).toEqual(
      runs.map((r) => [r.sync_id, r.user_email]).sort(),
    );
    expect(status.in_flight?.runs.filter((r) => r.ingest === "done").length).toBeLessThan(runs.length);
    expect(status.live_resources).toBe(
      h.query<{ n: number }>(
        `SELECT count(DISTINCT a.key) AS n FROM resource_access a JOIN resources r ON r.key = a.key
         WHERE a.mirror = 'main' AND r.deleted_at IS NULL`,
      )[0]?.n,
    );
    const text = await h.cli(["status"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`in flight:                full trigger ${triggerId}`);
    expect(text.stdout).toContain("the next pass resumes it");
  });
});
