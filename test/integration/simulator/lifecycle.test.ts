import { describe, expect, it } from "vitest";
import { startTestSimulator, trigger } from "../../helpers/simulator.js";

const statusOf = (run: { sources: { status: string }[] }) => run.sources.map((s) => s.status);

describe("run lifecycle", () => {
  it("on-poll: each read answers, then moves every unfinished source one step", async () => {
    const { sim, api } = await startTestSimulator();
    const { runs } = await trigger(api, sim.syncConfigId);
    const path = `/sync-task/${runs[0].sync_id}`;
    const reads = [];
    for (let i = 0; i < 4; i++) reads.push((await api.get(path)).body);
    expect(reads.map((r) => r.status)).toEqual(["pending", "running", "completed", "completed"]);
    expect(statusOf(reads[0])).toEqual(["PENDING", "PENDING"]);
    expect(statusOf(reads[1])).toEqual(["RUNNING", "RUNNING"]);
    expect(reads[1].sources[0]).toMatchObject({
      started_at: expect.stringMatching(/\+00:00$/),
      completed_at: null,
      session_id: expect.any(String),
      summary: null,
    });
    expect(reads[2].sources[0]).toMatchObject({
      status: "COMPLETED",
      completed_at: expect.stringMatching(/\+00:00$/),
      error: null,
      summary: {
        status: "ok",
        counts: expect.any(Object),
        diagnostics: { degraded: false, degraded_reasons: [] },
      },
    });
    // Other runs of the trigger were not read, so they did not move.
    expect(sim.runs.get(runs[1].sync_id).status).toBe("pending");
  });

  it("on-poll: a run-list page moves the runs on it, and only those", async () => {
    const { sim, api } = await startTestSimulator();
    const { runs } = await trigger(api, sim.syncConfigId);
    const first = await api.get("/sync-task", { size: 1 });
    expect(first.body.items[0]).toMatchObject({ sync_id: runs[2].sync_id, status: "pending" });
    const second = await api.get("/sync-task", { size: 1 });
    expect(second.body.items[0].status).toBe("running");
    expect(sim.runs.get(runs[0].sync_id).status).toBe("pending");
    await api.get("/sync-task", { size: 1 });
    expect(sim.runs.get(runs[2].sync_id).status).toBe("completed");
  });

  it("on-poll: a client polling only the export sees 409 until the run finishes, then 200 with resources", async () => {
    const { sim, api } = await startTestSimulator({ users: 1 });
    const syncId = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    const path = `/sync-task/${syncId}/export`;
    const statuses: number[] = [];
    let last = await api.get(path);
    statuses.push(last.status);
    for (let read = 0; read < 5 && last.status === 409; read++) {
      last = await api.get(path);
      statuses.push(last.status);
    }
    expect(statuses).toEqual([409, 409, 200]);
    expect(last.body.resources.length).toBeGreaterThan(0);
  });

  it("on-poll: an export read of one source moves that run; held or manual runs stay put", async () => {
    const { sim, api } = await startTestSimulator({ users: 1 });
    const syncId = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    const path = `/sync-task/${syncId}/export`;
    expect((await api.get(path, { source: "notion" })).body.detail.sources).toEqual([
      { source: "notion", status: "PENDING" },
      { source: "github", status: "PENDING" },
    ]);
    sim.runs.hold();
    for (let i = 0; i < 3; i++) expect((await api.get(path)).status).toBe(409);
    expect(sim.runs.get(syncId).status).toBe("running");
    sim.runs.release();
    expect((await api.get(path, { source: "github" })).body.detail.sources).toEqual([
      { source: "notion", status: "RUNNING" },
      { source: "github", status: "RUNNING" },
    ]);
    expect((await api.get(path)).status).toBe(200);

    const manual = await startTestSimulator({ lifecycle: "manual", users: 1 });
    const manualId = (await trigger(manual.api, manual.sim.syncConfigId)).runs[0].sync_id;
    for (let i = 0; i < 3; i++) await manual.api.get(`/sync-task/${manualId}/export`);
    expect(manual.sim.runs.get(manualId).status).toBe("pending");
  });

  it("manual: reads move nothing; runs.advance moves one run or one source; finishAll finishes all", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual" });
    const { runs } = await trigger(api, sim.syncConfigId);
    const syncId = runs[0].sync_id;
    for (let i = 0; i < 3; i++) await api.get(`/sync-task/${syncId}`);
    expect((await api.get(`/sync-task/${syncId}`)).body.status).toBe("pending");
    sim.runs.advance(syncId, "github");
    expect(statusOf((await api.get(`/sync-task/${syncId}`)).body)).toEqual(["PENDING", "RUNNING"]);
    sim.runs.advance(syncId);
    expect(statusOf(sim.runs.get(syncId))).toEqual(["RUNNING", "COMPLETED"]);
    expect(sim.runs.get(runs[1].sync_id).status).toBe("pending");
    sim.runs.advance();
    expect(statusOf(sim.runs.get(syncId))).toEqual(["COMPLETED", "COMPLETED"]);
    expect(sim.runs.get(runs[1].sync_id).status).toBe("running");
    sim.runs.finishAll();
    expect(sim.runs.list().map((r) => r.status)).toEqual(["completed", "completed", "completed"]);
  });

  it("hold freezes every run, polled or advanced, until release", async () => {
    const { sim, api } = await startTestSimulator();
    const { runs } = await trigger(api, sim.syncConfigId);
    const path = `/sync-task/${runs[0].sync_id}`;
    sim.runs.hold();
    expect(sim.runs.held).toBe(true);
    for (let i = 0; i < 5; i++) expect((await api.get(path)).body.status).toBe("pending");
    await api.get("/sync-task");
    expect(() => sim.runs.advance()).toThrow(/held/);
    expect(() => sim.runs.finishAll()).toThrow(/held/);
    expect(sim.runs.list().every((r) => r.status === "pending")).toBe(true);
    sim.runs.release();
    await api.get(path);
    expect((await api.get(path)).body.status).toBe("running");
  });

  it("derives run status from sources: pending, running, completed, incomplete, failed", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual", users: 1 });
    const [notion, github] = sim.servers.map((s) => s.server_instance_id);
    const run = async () => (await trigger(api, sim.syncConfigId)).runs[0].sync_id as string;
    const status = async (syncId: string) => (await api.get(`/sync-task/${syncId}`)).body.status;

    const a = await run();
    expect(await status(a)).toBe("pending");
    sim.runs.advance(a, "notion");
    expect(await status(a)).toBe("running");
    sim.runs.advance(a, "notion");
    expect(statusOf(sim.runs.get(a))).toEqual(["COMPLETED", "PENDING"]);
    expect(await status(a)).toBe("running"); // one finished, one not started: still running
    sim.runs.finishAll();
    expect(await status(a)).toBe("completed");

    sim.setOutcome({ server_instance_id: github }, { task: "FAILED", times: 1 });
    sim.setOutcome({ server_instance_id: notion }, { task: "INCOMPLETE", times: 1 });
    const b = await run();
    sim.runs.finishAll();
    expect(statusOf(sim.runs.get(b))).toEqual(["INCOMPLETE", "FAILED"]);
    expect(await status(b)).toBe("incomplete");

    sim.setOutcome({ server_instance_id: github }, { task: "FAILED", times: 1 });
    const c = await run();
    sim.runs.finishAll();
    expect(statusOf(sim.runs.get(c))).toEqual(["COMPLETED", "FAILED"]);
    expect(await status(c)).toBe("failed");
  });

  it("answers 404 for an unknown id and for a trigger_id used as a sync_id", async () => {
    const { sim, api } = await startTestSimulator();
    const { trigger_id } = await trigger(api, sim.syncConfigId);
    for (const suffix of ["", "/export", "/transcript"]) {
      expect((await api.get(`/sync-task/${trigger_id}${suffix}`)).status).toBe(404);
    }
    expect((await api.post(`/sync-task/${trigger_id}/continue`, { message: "go" })).status).toBe(404);
    expect((await api.get("/sync-task/unknown")).status).toBe(404);
  });
});

describe("GET /sync-task", () => {
  it("lists newest first, items without source summary, error or timestamps", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual" });
    const first = await trigger(api, sim.syncConfigId);
    const second = await trigger(api, sim.syncConfigId);
    const { status, body } = await api.get("/sync-task");
    expect(status).toBe(200);
    expect(body.items).toHaveLength(6);
    expect(
      body.items.slice(0, 3).every((r: { trigger_id: string }) => r.trigger_id === second.trigger_id),
    ).toBe(true);
    expect(body.items[5].trigger_id).toBe(first.trigger_id);
    const item = body.items[0];
    expect(Object.keys(item)).toEqual(
      expect.arrayContaining([
        "sync_id",
        "sync_config_id",
        "trigger_id",
        "user_email",
        "status",
        "instructions",
        "since",
        "created_at",
        "sources",
      ]),
    );
    expect(Object.keys(item.sources[0]).sort()).toEqual(
      ["server_instance_id", "server_name", "source", "source_type", "status", "task_id"].sort(),
    );
    expect(body.meta).toMatchObject({
      size: 50,
      total: 6,
      next_cursor: null,
      has_next: false,
      has_prev: false,
    });
  });

  it("filters by trigger_id, sync_config_id and project_id", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual" });
    const other = sim.configs.create({ userEmails: ["user1@example.com"] });
    const a = await trigger(api, sim.syncConfigId);
    const b = await trigger(api, other);
    const byTrigger = await api.get("/sync-task", { trigger_id: a.trigger_id });
    expect(byTrigger.body.items.map((r: { sync_id: string }) => r.sync_id).sort()).toEqual(
      a.runs.map((r: { sync_id: string }) => r.sync_id).sort(),
    );
    const byConfig = await api.get("/sync-task", { sync_config_id: other });
    expect(byConfig.body.items.map((r: { trigger_id: string }) => r.trigger_id)).toEqual([b.trigger_id]);
    expect((await api.get("/sync-task", { project_id: sim.projectId })).body.items).toHaveLength(4);
    expect((await api.get("/sync-task", { project_id: "other" })).body.items).toHaveLength(0);
  });

  it("pages one trigger's 250 runs 100 at a time, leaving out the runs of other triggers", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual", users: 250, docs: 10 });
    const big = await trigger(api, sim.syncConfigId);
    await trigger(api, sim.syncConfigId);
    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 5; page++) {
      const { body } = await api.get("/sync-task", { trigger_id: big.trigger_id, size: 100, cursor });
      sizes.push(body.items.length);
      seen.push(...body.items.map((r: { sync_id: string }) => r.sync_id));
      expect(body.meta.total).toBe(250);
      if (!body.meta.has_next) break;
      cursor = body.meta.next_cursor;
    }
    expect(sizes).toEqual([100, 100, 50]);
    expect([...seen].sort()).toEqual(big.runs.map((r: { sync_id: string }) => r.sync_id).sort());
  });

  it("pages with size <= 100 and an opaque cursor; size above 100 is 400", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual", users: 5 });
    for (let i = 0; i < 3; i++) {
      await trigger(api, sim.syncConfigId);
      sim.clock.advance(60_000);
    }
    const all = (await api.get("/sync-task", { size: 100 })).body.items.map(
      (r: { sync_id: string }) => r.sync_id,
    );
    expect(all).toHaveLength(15);
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const { body } = await api.get("/sync-task", { size: 4, cursor });
      seen.push(...body.items.map((r: { sync_id: string }) => r.sync_id));
      expect(body.meta.has_prev).toBe(page > 0);
      if (!body.meta.has_next) break;
      cursor = body.meta.next_cursor;
    }
    expect(seen).toEqual(all);
    const createdAt = (await api.get("/sync-task", { size: 100 })).body.items.map(
      (r: { created_at: string }) => Date.parse(r.created_at),
    );
    expect([...createdAt].sort((x, y) => y - x)).toEqual(createdAt);
    expect((await api.get("/sync-task", { size: 101 })).status).toBe(400);
    expect((await api.get("/sync-task", { size: 0 })).status).toBe(400);
    expect((await api.get("/sync-task", { cursor: "%%%" })).status).toBe(400);
  });
});
