import { describe, expect, it } from "vitest";
import { startTestSimulator } from "../../helpers/simulator.js";

describe("simulator HTTP basics", () => {
  it("listens on 127.0.0.1 with an ephemeral port under /api/v1", async () => {
    const { sim } = await startTestSimulator();
    expect(sim.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/);
    expect(sim.baseUrl).not.toMatch(/:0\//);
  });

  it("refuses every route without a token or with a wrong one (401 with detail)", async () => {
    const { sim, api } = await startTestSimulator();
    const config = `/sync-configs/${sim.syncConfigId}`;
    const routes: [string, string][] = [
      ["GET", "/projects"],
      ["GET", `/sync-configs/sources?project_id=${sim.projectId}`],
      ["POST", "/sync-configs"],
      ["GET", "/sync-configs"],
      ["GET", config],
      ["PUT", config],
      ["DELETE", config],
      ["GET", `${config}/access`],
      ["POST", "/sync-task"],
      ["GET", "/sync-task"],
      ["GET", "/sync-task/x"],
      ["GET", "/sync-task/x/export"],
      ["POST", "/sync-task/x/continue"],
      ["GET", "/sync-task/x/transcript"],
    ];
    for (const [method, path] of routes) {
      const missing = await api.request(method, path, { token: null });
      expect(missing.status).toBe(401);
      expect(typeof missing.body.detail).toBe("string");
      const wrong = await api.request(method, path, { token: `${sim.token}x` });
      expect(wrong.status).toBe(401);
    }
    expect((await api.get(config)).status).toBe(200);
    expect((await api.get("/sync-task")).body.items).toEqual([]);
    const basic = await fetch(`${sim.baseUrl}/projects`, {
      headers: { authorization: `Basic ${sim.token}` },
    });
    expect(basic.status).toBe(401);
  });

  it("accepts a token given in options", async () => {
    const { api } = await startTestSimulator({ token: "test-token" });
    const response = await api.request("GET", "/projects", { token: "test-token" });
    expect(response.status).toBe(200);
  });

  it("lists projects as a JSON array and the syncable servers of a project", async () => {
    const { sim, api } = await startTestSimulator({
      serversPerType: { notion: 1, google_drive: 1, github: 1 },
    });
    const projects = await api.get("/projects");
    expect(projects.status).toBe(200);
    expect(Array.isArray(projects.body)).toBe(true);
    expect(projects.body[0]).toMatchObject({ id: sim.projectId, name: expect.any(String) });

    const sources = await api.get("/sync-configs/sources", { project_id: sim.projectId });
    expect(sources.status).toBe(200);
    expect(sources.body.sources).toHaveLength(3);
    for (const source of sources.body.sources) {
      expect(Object.keys(source).sort()).toEqual(
        ["display_name", "rules_version", "server_instance_id", "server_name", "source_type"].sort(),
      );
    }
    expect(sources.body.sources.map((s: { source_type: string }) => s.source_type)).toEqual([
      "notion",
      "google_drive",
      "github",
    ]);
    expect((await api.get("/sync-configs/sources", { project_id: "nope" })).status).toBe(404);
    expect((await api.get("/sync-configs/sources")).status).toBe(422);
  });

  it("answers 404 for unknown paths and 405 for a wrong method", async () => {
    const { api } = await startTestSimulator();
    expect((await api.get("/nope")).status).toBe(404);
    expect((await api.request("PATCH", "/sync-task")).status).toBe(405);
  });

  it("answers 422 for a body that is not JSON", async () => {
    const { api } = await startTestSimulator();
    const response = await api.request("POST", "/sync-task", { body: "{not json" });
    expect(response.status).toBe(422);
  });

  it("logs requests with templated routes and statuses, never the token", async () => {
    const { sim, api } = await startTestSimulator();
    await api.get("/projects");
    await api.get(`/sync-configs/${sim.syncConfigId}`, { size: 5 });
    await api.request("GET", "/projects", { token: "wrong" });
    await api.get("/sync-task/not-a-run");
    expect(sim.requests.map((r) => [r.method, r.route, r.status])).toEqual([
      ["GET", "/projects", 200],
      ["GET", "/sync-configs/{id}", 200],
      ["GET", "/projects", 401],
      ["GET", "/sync-task/{sync_id}", 404],
    ]);
    expect(sim.requests[1]).toMatchObject({
      path: `/api/v1/sync-configs/${sim.syncConfigId}`,
      query: { size: "5" },
      at: expect.stringMatching(/Z$/),
    });
    const logged = JSON.stringify(sim.requests);
    expect(logged).not.toContain(sim.token);
    expect(logged.toLowerCase()).not.toContain("authorization");
    expect(logged.toLowerCase()).not.toContain("bearer");
    sim.requests.length = 0;
    await api.get("/projects");
    expect(sim.requests).toHaveLength(1);
  });

  it("keeps only the newest entries beyond the request log limit", async () => {
    const { sim, api } = await startTestSimulator({ requestLogLimit: 2 });
    await api.get("/projects");
    await api.get("/sync-task");
    await api.get("/sync-configs");
    expect(sim.requests.map((r) => r.route)).toEqual(["/sync-task", "/sync-configs"]);
  });
});
