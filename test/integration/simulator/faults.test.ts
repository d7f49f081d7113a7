import { describe, expect, it } from "vitest";
import { startTestSimulator, trigger } from "../../helpers/simulator.js";

const EXPORT = "GET /sync-task/{sync_id}/export";

describe("fault injection", () => {
  it("answers 429 with Retry-After (0 allowed) or without it, then recovers", async () => {
    const { sim, api } = await startTestSimulator();
    sim.faults.inject("GET /projects", { kind: "429", retryAfterSeconds: 0 });
    sim.faults.inject("GET /projects", { kind: "429" });
    const first = await api.get("/projects");
    expect(first.status).toBe(429);
    expect(first.headers.get("retry-after")).toBe("0");
    const second = await api.get("/projects");
    expect(second.status).toBe(429);
    expect(second.headers.get("retry-after")).toBeNull();
    expect((await api.get("/projects")).status).toBe(200);
    expect(sim.requests.map((r) => [r.status, r.fault])).toEqual([
      [429, "429"],
      [429, "429"],
      [200, undefined],
    ]);
  });

  it("sends Retry-After as an HTTP date when asked, on a 429 or a 503", async () => {
    const { sim, api } = await startTestSimulator();
    sim.faults.inject("GET /projects", { kind: "429", retryAfterSeconds: 120, retryAfterForm: "http-date" });
    sim.faults.inject("GET /projects", { kind: "503", retryAfterSeconds: 30, retryAfterForm: "http-date" });
    sim.faults.inject("GET /projects", { kind: "503", retryAfterSeconds: 7 });
    for (const [status, seconds] of [
      [429, 120],
      [503, 30],
    ] as const) {
      const sentAt = Date.now();
      const answer = await api.get("/projects");
      expect(answer.status).toBe(status);
      const header = answer.headers.get("retry-after") ?? "";
      expect(header).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
      const ahead = Date.parse(header) - sentAt;
      expect(ahead).toBeGreaterThan((seconds - 2) * 1000);
      expect(ahead).toBeLessThanOrEqual((seconds + 1) * 1000);
    }
    const third = await api.get("/projects");
    expect([third.status, third.headers.get("retry-after")]).toEqual([503, "7"]);
  });

  it("extra-fields: adds undocumented fields to every object, not inside values kept verbatim", async () => {
    const { sim, api } = await startTestSimulator({ users: 1 });
    const { runs } = (await api.post("/sync-task", { sync_config_id: sim.syncConfigId })).body;
    sim.runs.finishAll();
    sim.faults.inject(EXPORT, { kind: "extra-fields" });
    const page = (await api.get(`/sync-task/${runs[0].sync_id}/export`)).body;
    expect(page).toHaveProperty("x_added_later");
    expect(page.page).toHaveProperty("x_note");
    expect(page.sources[0]).toHaveProperty("x_note");
    expect(page.sources[0].counts).toHaveProperty("x_note");
    const resource = page.resources[0];
    expect(resource).toHaveProperty("x_note");
    expect(resource.content).toHaveProperty("x_note");
    expect(resource.fields).not.toHaveProperty("x_note");
    expect(resource.metadata).not.toHaveProperty("x_note");
    const plain = (await api.get(`/sync-task/${runs[0].sync_id}/export`)).body;
    expect(plain).not.toHaveProperty("x_note");
  });

  it("answers 500, 502 and 503 `times` times without handling the request", async () => {
    const { sim, api } = await startTestSimulator();
    for (const kind of ["500", "502", "503"] as const) {
      sim.faults.inject("POST /sync-task", { kind, times: 2 });
      for (let i = 0; i < 2; i++) {
        const response = await api.post("/sync-task", { sync_config_id: sim.syncConfigId });
        expect(response.status).toBe(Number(kind));
        expect(response.body.detail).toBeDefined();
      }
    }
    expect((await api.get("/sync-task")).body.items).toHaveLength(0);
    expect((await api.post("/sync-task", { sync_config_id: sim.syncConfigId })).status).toBe(201);
  });

  it("resets the connection before anything is handled", async () => {
    const { sim, api } = await startTestSimulator();
    sim.faults.inject("POST /sync-task", { kind: "reset" });
    await expect(api.post("/sync-task", { sync_config_id: sim.syncConfigId })).rejects.toThrow();
    expect((await api.get("/sync-task")).body.items).toHaveLength(0);
    expect(sim.requests[0]).toMatchObject({
      route: "/sync-task",
      method: "POST",
      status: null,
      fault: "reset",
    });
  });

  it("drop-after handles the request fully (the trigger creates its runs), then drops the connection", async () => {
    const { sim, api } = await startTestSimulator();
    sim.faults.inject("POST /sync-task", { kind: "drop-after" });
    await expect(api.post("/sync-task", { sync_config_id: sim.syncConfigId })).rejects.toThrow();
    const runs = await api.get("/sync-task", { sync_config_id: sim.syncConfigId });
    expect(runs.body.items).toHaveLength(3);
    expect(sim.requests[0]).toMatchObject({ status: null, fault: "drop-after" });
  });

  it("delays a request by D ms, then handles it normally", async () => {
    const { sim, api } = await startTestSimulator();
    sim.faults.inject("GET /projects", { kind: "delay", ms: 5 });
    expect((await api.get("/projects")).status).toBe(200);
    expect(sim.requests[0]).toMatchObject({ status: 200, fault: "delay" });
  });

  it("answers 200 with a body that is not JSON (after handling the request)", async () => {
    const { sim } = await startTestSimulator();
    sim.faults.inject("POST /sync-task", { kind: "malformed" });
    const response = await fetch(`${sim.baseUrl}/sync-task`, {
      method: "POST",
      headers: { authorization: `Bearer ${sim.token}`, "content-type": "application/json" },
      body: JSON.stringify({ sync_config_id: sim.syncConfigId }),
    });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(() => JSON.parse(text)).toThrow();
    expect(sim.runs.list()).toHaveLength(3);
  });

  it("answers 200 with a required field missing: the first one, or the one named", async () => {
    const { sim, api } = await startTestSimulator();
    sim.faults.inject(`GET /sync-configs/{id}`, { kind: "missing-field" });
    const first = await api.get(`/sync-configs/${sim.syncConfigId}`);
    expect(first.status).toBe(200);
    expect(first.body).not.toHaveProperty("id");
    expect(first.body).toHaveProperty("servers");
    const { runs } = await trigger(api, sim.syncConfigId);
    sim.faults.inject("GET /sync-task/{sync_id}", { kind: "missing-field", field: "status" });
    const run = await api.get(`/sync-task/${runs[0].sync_id}`);
    expect(run.body).not.toHaveProperty("status");
    expect(run.body.sync_id).toBe(runs[0].sync_id);
    sim.faults.inject("GET /projects", { kind: "missing-field", field: "id" });
    const projects = await api.get("/projects");
    expect(projects.body[0]).not.toHaveProperty("id");
    sim.faults.inject("GET /sync-configs/{id}/access", { kind: "missing-field", field: "items.*.servers" });
    const access = await api.get(`/sync-configs/${sim.syncConfigId}/access`);
    expect(access.body.items.length).toBeGreaterThan(0);
    for (const item of access.body.items) {
      expect(item).not.toHaveProperty("servers");
      expect(item).toHaveProperty("project_user");
    }
    expect(access.body.meta).toHaveProperty("has_next");
  });

  it("not-finished: a finished run's export answers 409 with each source RUNNING, then the export", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual", users: 1 });
    const syncId = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    sim.runs.finishAll();
    sim.faults.inject(EXPORT, { kind: "not-finished", times: 2 });
    const path = `/sync-task/${syncId}/export`;
    const labels = (await api.get(`/sync-task/${syncId}`)).body.sources.map(
      (s: { source: string }) => s.source,
    );
    for (let i = 0; i < 2; i++) {
      const refused = await api.get(path);
      expect(refused.status).toBe(409);
      expect(refused.body.detail).toEqual({
        message: "The export is available once the run has finished.",
        sources: labels.map((source: string) => ({ source, status: "RUNNING" })),
      });
    }
    expect((await api.get(path)).status).toBe(200);
    expect(sim.requests.filter((r) => r.fault).map((r) => [r.status, r.fault])).toEqual([
      [409, "not-finished"],
      [409, "not-finished"],
    ]);
  });

  it("applies '*' to any route; pending() shows what is left and clear() drops it", async () => {
    const { sim, api } = await startTestSimulator();
    sim.faults.inject("*", { kind: "503", times: 2 });
    sim.faults.inject(EXPORT, { kind: "500", times: 5 });
    expect((await api.get("/projects")).status).toBe(503);
    expect(sim.faults.pending()).toEqual([
      { route: "*", fault: { kind: "503", times: 2 }, remaining: 1 },
      { route: EXPORT, fault: { kind: "500", times: 5 }, remaining: 5 },
    ]);
    expect((await api.get("/sync-task")).status).toBe(503);
    expect((await api.get("/sync-task")).status).toBe(200);
    sim.faults.clear();
    expect(sim.faults.pending()).toEqual([]);
    expect(() => sim.faults.inject("sync-task", { kind: "500" })).toThrow();
  });

  it("targets one templated route and leaves the others alone", async () => {
    const { sim, api } = await startTestSimulator();
    const { runs } = await trigger(api, sim.syncConfigId);
    sim.runs.finishAll();
    sim.faults.inject(EXPORT, { kind: "503", times: 2 });
    expect((await api.get(`/sync-task/${runs[0].sync_id}`)).status).toBe(200);
    expect((await api.get(`/sync-task/${runs[0].sync_id}/export`)).status).toBe(503);
    expect((await api.get(`/sync-task/${runs[1].sync_id}/export`)).status).toBe(503);
    expect((await api.get(`/sync-task/${runs[1].sync_id}/export`)).status).toBe(200);
  });
});

describe("export quirks", () => {
  it("repeat-key: the next page after the first starts with the previous page's last key", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual", users: 1, docs: 30 });
    const syncId = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    sim.runs.finishAll();
    sim.faults.quirk("repeat-key");
    const path = `/sync-task/${syncId}/export`;
    const first = (await api.get(path, { limit: 10 })).body;
    const second = (await api.get(path, { offset: first.page.next_offset, limit: 10 })).body;
    expect(second.resources[0].key).toBe(first.resources.at(-1).key);
    const third = (await api.get(path, { offset: second.page.next_offset, limit: 10 })).body;
    expect(third.resources[0].key).not.toBe(second.resources.at(-1).key);
  });

  it("engine-change: pages of one export disagree on engine_version and hashes", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual", users: 1, docs: 30 });
    const syncId = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    sim.runs.finishAll();
    const path = `/sync-task/${syncId}/export`;
    const before = (await api.get(path, { offset: 10, limit: 10 })).body;
    sim.faults.quirk("engine-change");
    const first = (await api.get(path, { limit: 10 })).body;
    const second = (await api.get(path, { offset: 10, limit: 10 })).body;
    expect(first.engine_version).toBe(2);
    expect(second.engine_version).toBe(3);
    expect(second.resources.map((r: { key: string }) => r.key)).toEqual(
      before.resources.map((r: { key: string }) => r.key),
    );
    expect(second.resources[0].content_hash).not.toBe(before.resources[0].content_hash);
  });
});
