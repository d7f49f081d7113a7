import { describe, expect, it } from "vitest";
import { exportAll, startTestSimulator, trigger } from "../../helpers/simulator.js";

async function manualRun(options: Parameters<typeof startTestSimulator>[0] = {}) {
  const { sim, api } = await startTestSimulator({ lifecycle: "manual", users: 1, docs: 200, ...options });
  return {
    sim,
    api,
    notion: sim.servers[0]?.server_instance_id ?? "",
    github: sim.servers[1]?.server_instance_id ?? "",
  };
}

describe("source outcomes", () => {
  it("INCOMPLETE collects only includeFraction; continue re-runs it to the full set", async () => {
    const { sim, api, notion } = await manualRun();
    sim.setOutcome({ server_instance_id: notion }, { task: "INCOMPLETE", includeFraction: 0.25, times: 1 });
    const syncId = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    sim.runs.finishAll();
    const partial = await api.get(`/sync-task/${syncId}/export`, { source: "notion", limit: 500 });
    expect(partial.body.sources[0]).toMatchObject({ task_status: "INCOMPLETE", status: "ok" });
    expect(partial.body.sources[0].counts).toMatchObject({ included: 25, exported: 25, undecided: 75 });
    expect(partial.body.undecided.length).toBeGreaterThan(0);
    expect((await api.get(`/sync-task/${syncId}`)).body.status).toBe("incomplete");

    const continued = await api.post(`/sync-task/${syncId}/continue`, {
      message: "Continue where you stopped.",
    });
    expect(continued.status).toBe(200);
    expect(continued.body.status).toBe("running");
    expect(continued.body.sources[0]).toMatchObject({ status: "RUNNING", completed_at: null });
    expect((await api.get(`/sync-task/${syncId}/export`)).status).toBe(409);
    sim.runs.advance(syncId);
    const full = await api.get(`/sync-task/${syncId}/export`, { source: "notion", limit: 500 });
    expect(full.body.sources[0]).toMatchObject({ task_status: "COMPLETED" });
    expect(full.body.sources[0].counts).toMatchObject({ included: 100, exported: 100, undecided: 0 });
    expect((await api.get(`/sync-task/${syncId}`)).body.status).toBe("completed");
  });

  it("INCOMPLETE again after continue when the outcome still says so; default fraction is half", async () => {
    const { sim, api, github } = await manualRun();
    sim.setOutcome({ server_instance_id: github }, { task: "INCOMPLETE" });
    const syncId = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    sim.runs.finishAll();
    const counts = async () =>
      (await api.get(`/sync-task/${syncId}/export`, { source: "github" })).body.sources[0].counts.included;
    expect(await counts()).toBe(50);
    expect(
      (await api.post(`/sync-task/${syncId}/continue`, { message: "more", source: "github" })).status,
    ).toBe(200);
    sim.runs.finishAll();
    expect(sim.runs.get(syncId).sources[1]?.status).toBe("INCOMPLETE");
  });

  it("refuses continue with 409 when nothing is incomplete, a source runs or failed; checks the message", async () => {
    const { sim, api, github } = await manualRun();
    sim.setOutcome({ server_instance_id: github }, { task: "FAILED", times: 1 });
    const syncId = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    const path = `/sync-task/${syncId}/continue`;
    expect((await api.post(path, { message: "go" })).status).toBe(409);
    sim.runs.advance(syncId);
    expect((await api.post(path, { message: "go", source: "notion" })).status).toBe(409);
    sim.runs.finishAll();
    expect((await api.post(path, { message: "go" })).status).toBe(409);
    expect((await api.post(path, { message: "go", source: "notion" })).status).toBe(409);
    const failed = await api.post(path, { message: "go", source: "github" });
    expect(failed.status).toBe(409);
    expect(failed.body.detail).toMatch(/failed/);
    expect((await api.post(path, { message: "go", source: "nope" })).status).toBe(400);
    expect((await api.post(path, { message: "x".repeat(50_001) })).status).toBe(400);
    expect((await api.post(path, {})).status).toBe(422);
  });

  it("accepts a continue message of exactly 50,000 characters", async () => {
    const { sim, api, notion } = await manualRun();
    sim.setOutcome({ server_instance_id: notion }, { task: "INCOMPLETE", times: 1 });
    const syncId = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    sim.runs.finishAll();
    expect((await api.post(`/sync-task/${syncId}/continue`, { message: "x".repeat(50_000) })).status).toBe(
      200,
    );
  });

  it("FAILED sources carry an error, no summary, and export nothing", async () => {
    const { sim, api, github } = await manualRun();
    sim.setOutcome(
      { server_instance_id: github },
      { task: "FAILED", error: "GitHub answered 502 to every call." },
    );
    const syncId = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    sim.runs.finishAll();
    const detail = (await api.get(`/sync-task/${syncId}`)).body;
    expect(detail.status).toBe("failed");
    expect(detail.sources[1]).toMatchObject({
      status: "FAILED",
      error: "GitHub answered 502 to every call.",
      summary: null,
      completed_at: expect.any(String),
    });
    const exported = await api.get(`/sync-task/${syncId}/export`, { source: "github" });
    expect(exported.status).toBe(200);
    expect(exported.body.resources).toEqual([]);
    expect(exported.body.sources[0]).toMatchObject({
      task_status: "FAILED",
      counts: { exported: 0, included: 0 },
    });
    const all = await exportAll(api, syncId, { limit: 500 });
    expect(all[0].resources.every((r: { source: string }) => r.source === "notion")).toBe(true);
  });

  it("INCOMPLETE sources carry the outcome's error in the run detail until continued", async () => {
    const { sim, api, notion } = await manualRun();
    const said = "Stopped at the iteration limit with pages left unread.";
    sim.setOutcome({ server_instance_id: notion }, { task: "INCOMPLETE", error: said, times: 1 });
    const syncId = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    sim.runs.finishAll();
    const detail = (await api.get(`/sync-task/${syncId}`)).body;
    expect(detail.sources[0]).toMatchObject({ status: "INCOMPLETE", error: said });
    expect(detail.sources[1]).toMatchObject({ status: "COMPLETED", error: null });

    expect((await api.post(`/sync-task/${syncId}/continue`, { message: "go on" })).status).toBe(200);
    expect((await api.get(`/sync-task/${syncId}`)).body.sources[0]).toMatchObject({
      status: "RUNNING",
      error: null,
    });
  });

  it("forces export statuses authentication_required, degraded and config_stale", async () => {
    const { sim, api } = await manualRun({ users: 3 });
    const forced = ["authentication_required", "degraded", "config_stale"] as const;
    for (const [i, exportStatus] of forced.entries()) {
      sim.setOutcome({ user: `user${i + 1}@example.com` }, { task: "COMPLETED", exportStatus });
    }
    const { runs } = await trigger(api, sim.syncConfigId);
    sim.runs.finishAll();
    for (const [i, exportStatus] of forced.entries()) {
      const page = (await api.get(`/sync-task/${runs[i].sync_id}/export`)).body;
      expect(page.sources.map((s: { status: string }) => s.status)).toEqual([exportStatus, exportStatus]);
      const detail = (await api.get(`/sync-task/${runs[i].sync_id}`)).body;
      expect(detail.sources[0].summary.status).toBe(exportStatus);
      expect(detail.status).toBe("completed");
    }
    const degraded = (await api.get(`/sync-task/${runs[1].sync_id}/export`)).body.sources[0];
    expect(degraded.diagnostics).toEqual({
      degraded: true,
      degraded_reasons: expect.arrayContaining([expect.any(String)]),
    });
  });

  it("reports no_results when a source exports nothing", async () => {
    const { sim, api } = await manualRun({ docs: 1 });
    const syncId = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    sim.runs.finishAll();
    const page = (await api.get(`/sync-task/${syncId}/export`)).body;
    expect(page.sources.map((s: { status: string }) => s.status)).toEqual(["ok", "no_results"]);
  });

  it("applies an outcome only to the matching user and only `times` times", async () => {
    const { sim, api } = await manualRun({ users: 2 });
    sim.setOutcome({ user: "user2@example.com" }, { task: "FAILED", times: 2 });
    const first = await trigger(api, sim.syncConfigId);
    sim.runs.finishAll();
    expect(sim.runs.get(first.runs[0].sync_id).status).toBe("completed");
    expect(sim.runs.get(first.runs[1].sync_id).status).toBe("failed");
    const second = await trigger(api, sim.syncConfigId);
    sim.runs.finishAll();
    expect(sim.runs.get(second.runs[1].sync_id).status).toBe("completed");
    sim.setOutcome({}, { task: "FAILED" });
    sim.clearOutcomes();
    const third = await trigger(api, sim.syncConfigId);
    sim.runs.finishAll();
    expect(
      sim.runs
        .list()
        .filter((r) => r.trigger_id === third.trigger_id)
        .every((r) => r.status === "completed"),
    ).toBe(true);
  });
});
