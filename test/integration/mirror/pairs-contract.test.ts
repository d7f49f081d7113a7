/**
 * Pairs, watermarks and baselines from outside: the built CLI's `sync --json` and `status --json`
 * against the simulator, the `since` each trigger carried read from the service's own runs.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { MirrorStatus } from "../../../src/sync/status-report.js";
import type { MirrorSummary } from "../../../src/sync/summary.js";
import { createHarness, expectedKeys, type Harness, visibleKeys } from "../../helpers/mirror-harness.js";
import { buildOnce } from "../daemon/setup.js";

let h: Harness;
beforeAll(buildOnce);
afterEach(async () => {
  await h?.close();
});

const [U1, U2, U3] = ["user1@example.com", "user2@example.com", "user3@example.com"];
const HOUR_MS = 3_600_000;

async function sync(args: string[] = []): Promise<{ code: number | null; summary: MirrorSummary }> {
  const r = await h.cli(["sync", ...args, "--json"]);
  expect(r.stdout, r.stderr).not.toBe("");
  return { code: r.code, summary: JSON.parse(r.stdout).mirrors[0] };
}

async function status(): Promise<MirrorStatus> {
  const r = await h.cli(["status", "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout).mirrors[0];
}

/** The service's `created_at` (ms) of a trigger's runs, and the `since` they were asked with. */
function triggerRuns(triggerId: string): { createdAtMs: number; since: string | null } {
  const run = h.sim.runs.list().find((r) => r.trigger_id === triggerId);
  if (!run) throw new Error(`no run of trigger ${triggerId}`);
  return { createdAtMs: Date.parse(run.created_at), since: run.since };
}

describe("a user who left and came back before any full pass", () => {
  it("awaits a baseline: since moved past their watermark while they were away", async () => {
    const mirror: Record<string, unknown> = {};
    h = await createHarness({ sim: { docs: 30 }, mirror, defaults: { since_overlap_seconds: 60 } });
    mirror.sync_config_id = h.sim.configs.create({ name: "explicit", userEmails: [U1, U2, U3] });
    h.writeConfig();
    expect((await sync()).code).toBe(0);

    h.sim.people.leaveProject(U3);
    h.sim.clock.advance(HOUR_MS);
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id ?? "";
    const docId = h.sim.docs.add({ server_instance_id: notion, visibleTo: [U1, U3] });
    h.sim.clock.advance(HOUR_MS);
    const away = await sync();
    expect(away.code).toBe(0);
    expect(away.summary.skipped).toEqual({ not_a_project_user: h.sim.servers.length });
    const awayAt = triggerRuns(away.summary.trigger_id as string).createdAtMs;

    h.sim.people.joinProject(U3);
    const back = await sync();
    expect(back.summary).toMatchObject({ mode: "incremental", outcome: "succeeded" });
    expect(Date.parse(triggerRuns(back.summary.trigger_id as string).since ?? "")).toBe(awayAt - 60_000);
    const key = h.sim.docs.get(docId).key;
    // The document U3 gained while away was modified before that since: the incremental missed it for U3.
    expect(visibleKeys(h, U3)).not.toContain(key);
    expect(back.summary.pairs_awaiting_baseline).toBe(h.sim.servers.length);
    expect((await status()).pairs_awaiting_baseline).toBe(h.sim.servers.length);

    expect((await sync(["--full"])).code).toBe(0);
    expect(visibleKeys(h, U3)).toEqual(expectedKeys(h.sim, U3));
    expect((await status()).pairs_awaiting_baseline).toBe(0);
  });
});
