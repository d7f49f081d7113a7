import { describe, expect, it } from "vitest";
import type { Simulator } from "../../../src/simulator/index.js";
import { type Body, startTestSimulator } from "../../helpers/simulator.js";

/** The /_sim seam (admin.ts) that another process, e.g. the benchmark, uses to drive a simulator. */
describe("simulator admin routes", () => {
  const adminFetch = (baseUrl: string, path: string, init: RequestInit = {}) =>
    fetch(`${new URL(baseUrl).origin}/_sim${path}`, init);

  it("edits a seeded random share of live documents: new versions and modified times", async () => {
    const { sim } = await startTestSimulator({ docs: 200 });
    sim.docs.remove("doc-0");
    const headers = { authorization: `Bearer ${sim.token}`, "content-type": "application/json" };
    const response = await adminFetch(sim.baseUrl, "/docs/edit-random", {
      method: "POST",
      headers,
      body: JSON.stringify({ fraction: 0.25, seed: 4 }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ edited: 50, live: 199 });
    const edited = sim.docs.list().filter((d) => d.version === 2);
    expect(edited).toHaveLength(50);
    expect(edited.every((d) => !d.deleted && d.modifiedAt !== null)).toBe(true);
    const bad = await adminFetch(sim.baseUrl, "/docs/edit-random", {
      method: "POST",
      headers,
      body: JSON.stringify({ fraction: 2 }),
    });
    expect(bad.status).toBe(422);
  });

  it("removes a seeded random share of live documents", async () => {
    const { sim } = await startTestSimulator({ docs: 200 });
    const headers = { authorization: `Bearer ${sim.token}`, "content-type": "application/json" };
    const response = await adminFetch(sim.baseUrl, "/docs/remove-random", {
      method: "POST",
      headers,
      body: JSON.stringify({ fraction: 0.05 }),
    });
    expect(await response.json()).toEqual({ removed: 10, live: 200 });
    expect(sim.docs.list().filter((d) => d.deleted)).toHaveLength(10);
  });

  it("sets how matching sources finish, with the error text a failed one carries", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual" });
    const headers = { authorization: `Bearer ${sim.token}`, "content-type": "application/json" };
    const [user] = sim.users;
    const set = await adminFetch(sim.baseUrl, "/outcomes", {
      method: "POST",
      headers,
      body: JSON.stringify({ task: "FAILED", error: "quota exceeded", user, times: 1 }),
    });
    expect(await set.json()).toEqual({ outcomes: 1 });
    const trigger = (await api.post("/sync-task", { sync_config_id: sim.syncConfigId })).body as Body;
    sim.runs.finishAll();
    const runs = sim.runs.list().filter((r) => r.trigger_id === trigger.trigger_id);
    const failed = runs.flatMap((r) => r.sources.filter((s) => s.status === "FAILED"));
    expect(failed.map((s) => s.error)).toEqual(["quota exceeded"]);
    for (const bad of [{ task: "DONE" }, { task: "FAILED", times: 0 }, { task: "FAILED", user: 3 }]) {
      const refused = await adminFetch(sim.baseUrl, "/outcomes", {
        method: "POST",
        headers,
        body: JSON.stringify(bad),
      });
      expect(refused.status, JSON.stringify(bad)).toBe(422);
    }
  });

  it("reads and clears the request log, needs the token, and is neither logged nor faulted", async () => {
    const { sim, api } = await startTestSimulator();
    const headers = { authorization: `Bearer ${sim.token}` };
    await api.get("/projects");
    sim.faults.inject("*", { kind: "503", times: 5 });
    const log = await adminFetch(sim.baseUrl, "/requests", { headers });
    expect(log.status).toBe(200);
    expect(((await log.json()) as Body).entries).toEqual([
      expect.objectContaining({ route: "/projects", status: 200 }),
    ]);
    expect((await adminFetch(sim.baseUrl, "/requests")).status).toBe(401);
    expect((await adminFetch(sim.baseUrl, "/requests", { method: "DELETE", headers })).status).toBe(204);
    expect(sim.requests).toEqual([]);
    expect(sim.faults.pending()[0]?.remaining).toBe(5);
    expect((await adminFetch(sim.baseUrl, "/nope", { headers })).status).toBe(404);
  });
  describe("faults, premium and cannot-start on demand", () => {
    const adminJson = async (sim: Simulator, method: string, path: string, body?: unknown) => {
      const response = await adminFetch(sim.baseUrl, path, {
        method,
        headers: { authorization: `Bearer ${sim.token}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      return { status: response.status, body: (text === "" ? undefined : JSON.parse(text)) as Body };
    };

    it("injects a fault on one route: one 503 with its Retry-After, then the route answers again", async () => {
      const { sim, api } = await startTestSimulator();
      const set = await adminJson(sim, "POST", "/faults", {
        route: "GET /projects",
        kind: "503",
        times: 1,
        retry_after_seconds: 2,
      });
      expect(set).toEqual({
        status: 200,
        body: { faults: [{ route: "GET /projects", remaining: 1, kind: "503", retry_after_seconds: 2 }] },
      });
      const faulted = await api.get("/projects");
      expect([faulted.status, faulted.headers.get("retry-after")]).toEqual([503, "2"]);
      expect((await api.get("/projects")).status).toBe(200);
      expect((await adminJson(sim, "GET", "/faults")).body).toEqual({ faults: [] });
      expect(sim.requests.map((r) => [r.route, r.status])).toEqual([
        ["/projects", 503],
        ["/projects", 200],
      ]);
    });

    it("lists pending faults in snake_case, clears them, and refuses a fault it cannot apply with a 422", async () => {
      const { sim } = await startTestSimulator();
      await adminJson(sim, "POST", "/faults", { route: "*", kind: "delay", ms: 0, times: 3 });
      await adminJson(sim, "POST", "/faults", {
        route: "GET /sync-task/{sync_id}/export",
        kind: "missing-field",
        field: ["items"],
      });
      await adminJson(sim, "POST", "/faults", {
        route: "POST /sync-task",
        kind: "429",
        retry_after_form: "http-date",
      });
      expect((await adminJson(sim, "GET", "/faults")).body.faults).toEqual([
        { route: "*", remaining: 3, kind: "delay", ms: 0 },
        { route: "GET /sync-task/{sync_id}/export", remaining: 1, kind: "missing-field", field: ["items"] },
        { route: "POST /sync-task", remaining: 1, kind: "429", retry_after_form: "http-date" },
      ]);
      expect(await adminJson(sim, "DELETE", "/faults")).toEqual({ status: 204, body: undefined });
      expect(sim.faults.pending()).toEqual([]);
      for (const [bad, loc] of [
        [{ route: "*", kind: "teapot" }, ["body", "kind"]],
        [{ route: "GET /nope", kind: "503" }, ["body", "route"]],
        [{ kind: "503" }, ["body", "route"]],
        [{ route: "*", kind: "delay" }, ["body", "ms"]],
        [{ route: "*", kind: "503", times: 0 }, ["body", "times"]],
        [{ route: "*", kind: "503", retry_after_form: "soon" }, ["body", "retry_after_form"]],
        [{ route: "*", kind: "date-filtered" }, ["body", "since"]],
      ] as const) {
        const refused = await adminJson(sim, "POST", "/faults", bad);
        expect(refused.status, JSON.stringify(bad)).toBe(422);
        expect(refused.body.detail, JSON.stringify(bad)).toEqual([expect.objectContaining({ loc })]);
      }
      expect(sim.faults.pending()).toEqual([]);
    });

    it("turns Background Sync off, refusing triggers with 403 or 409 as chosen, and on again", async () => {
      const { sim, api } = await startTestSimulator({ lifecycle: "manual" });
      const body = { sync_config_id: sim.syncConfigId };
      expect(await adminJson(sim, "POST", "/premium", { enabled: false, status: 409 })).toEqual({
        status: 200,
        body: { enabled: false, status: 409 },
      });
      const refused = await api.post("/sync-task", body);
      expect(refused.status).toBe(409);
      expect(refused.body.detail).toMatch(/Background Sync is a premium feature/);
      await adminJson(sim, "POST", "/premium", { enabled: false });
      expect((await api.post("/sync-task", body)).status).toBe(403);
      await adminJson(sim, "POST", "/premium", { enabled: true });
      expect((await api.post("/sync-task", body)).status).toBe(201);
      for (const bad of [{}, { enabled: "no" }, { enabled: false, status: 500 }]) {
        expect((await adminJson(sim, "POST", "/premium", bad)).status, JSON.stringify(bad)).toBe(422);
      }
    });

    it("makes triggers answer 409 with a given detail until it is cleared", async () => {
      const { sim, api } = await startTestSimulator({ lifecycle: "manual" });
      const body = { sync_config_id: sim.syncConfigId };
      const detail = "the workspace is being migrated; try again later";
      expect((await adminJson(sim, "POST", "/cannot-start", { detail })).body).toEqual({ detail });
      expect(await api.post("/sync-task", body)).toMatchObject({ status: 409, body: { detail } });
      await adminJson(sim, "POST", "/cannot-start", { detail: null });
      expect((await api.post("/sync-task", body)).status).toBe(201);
      expect((await adminJson(sim, "POST", "/cannot-start", { detail: "" })).status).toBe(422);
    });
  });
});
