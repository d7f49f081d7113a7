import { describe, expect, it } from "vitest";
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
});
