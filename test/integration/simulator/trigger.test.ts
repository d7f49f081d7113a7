import { describe, expect, it } from "vitest";
import { startTestSimulator, trigger } from "../../helpers/simulator.js";

/** Field sets of examples/trigger-response.json. */
const TRIGGER_KEYS = [
  "trigger_id",
  "sync_config_id",
  "status",
  "since",
  "runs",
  "skipped",
  "skipped_count",
  "resolved_skill",
  "skill_warning",
];
const RUN_KEYS = ["sync_id", "user_email", "sources"];
const SOURCE_KEYS = [
  "source",
  "source_type",
  "server_name",
  "server_instance_id",
  "resolved_by",
  "config_warnings",
  "task_id",
];
const keysOf = (value: object) => Object.keys(value).sort();

describe("POST /sync-task", () => {
  it("starts one run per user with one source per reachable server, shaped like the example", async () => {
    const { sim, api } = await startTestSimulator();
    sim.clock.set(new Date("2026-11-21T06:00:02Z"));
    const response = await api.post("/sync-task", {
      sync_config_id: sim.syncConfigId,
      since: "2026-11-20T00:00:00Z",
    });
    expect(response.status).toBe(201);
    const body = response.body;
    expect(keysOf(body)).toEqual([...TRIGGER_KEYS].sort());
    expect(body).toMatchObject({
      sync_config_id: sim.syncConfigId,
      status: "pending",
      since: "2026-11-20T00:00:00Z",
    });
    expect(body.runs.map((r: { user_email: string }) => r.user_email)).toEqual(sim.users);
    expect(keysOf(body.runs[0])).toEqual([...RUN_KEYS].sort());
    expect(keysOf(body.runs[0].sources[0])).toEqual([...SOURCE_KEYS].sort());
    expect(body.runs[0].sources.map((s: { source: string }) => s.source)).toEqual(["notion", "github"]);
    expect(body.runs[0].sources[0]).toMatchObject({
      source_type: "notion",
      server_name: "Team Wiki",
      server_instance_id: sim.servers[0]?.server_instance_id,
      resolved_by: "explicit",
      config_warnings: [],
      task_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(body).toMatchObject({ skipped: [], skipped_count: 0, resolved_skill: null, skill_warning: null });
    const run = await api.get(`/sync-task/${body.runs[0].sync_id}`);
    expect(run.body).toMatchObject({ trigger_id: body.trigger_id, created_at: "2026-11-21T06:00:02+00:00" });
  });

  it("labels sources <type>-<server slug> when the config has two servers of one type", async () => {
    const { sim, api } = await startTestSimulator({ serversPerType: { notion: 2, github: 1 } });
    const body = await trigger(api, sim.syncConfigId);
    expect(body.runs[0].sources.map((s: { source: string }) => s.source)).toEqual([
      "notion-team-wiki",
      "notion-eng-docs",
      "github",
    ]);
    const single = sim.configs.create({ serverIds: [sim.servers[1]?.server_instance_id ?? ""] });
    const alone = await trigger(api, single);
    expect(alone.runs[0].sources.map((s: { source: string }) => s.source)).toEqual(["notion"]);
  });

  it("skips pairs: not_a_project_user, not_syncable, not_accessible with auth_status", async () => {
    const { sim, api } = await startTestSimulator({ users: 4 });
    const [notion, github] = sim.servers.map((s) => s.server_instance_id);
    const config = sim.configs.create({ userEmails: sim.users });
    sim.people.leaveProject("user4@example.com");
    sim.people.setAuth("user2@example.com", github ?? "", "not_authenticated");
    sim.people.setAuth("user3@example.com", notion ?? "", "needs_tenant_admin");
    sim.people.setAuth("user3@example.com", github ?? "", "not_syncable");
    sim.people.setAuth("user1@example.com", github ?? "", "no_auth_required");
    sim.configs.setServerAvailable(config, github ?? "", false);
    const body = await trigger(api, config);
    expect(body.runs.map((r: { user_email: string }) => r.user_email)).toEqual([
      "user1@example.com",
      "user2@example.com",
    ]);
    expect(body.runs[0].sources.map((s: { source: string }) => s.source)).toEqual(["notion"]);
    expect(body.skipped).toEqual([
      {
        user_email: "user1@example.com",
        server_instance_id: github,
        server_name: "GitHub",
        reason: "not_syncable",
      },
      {
        user_email: "user2@example.com",
        server_instance_id: github,
        server_name: "GitHub",
        reason: "not_syncable",
      },
      {
        user_email: "user3@example.com",
        server_instance_id: notion,
        server_name: "Team Wiki",
        reason: "not_accessible",
        auth_status: "needs_tenant_admin",
      },
      {
        user_email: "user3@example.com",
        server_instance_id: github,
        server_name: "GitHub",
        reason: "not_syncable",
      },
      {
        user_email: "user4@example.com",
        server_instance_id: notion,
        server_name: "Team Wiki",
        reason: "not_a_project_user",
      },
      {
        user_email: "user4@example.com",
        server_instance_id: github,
        server_name: "GitHub",
        reason: "not_a_project_user",
      },
    ]);
    expect(body.skipped_count).toBe(6);

    sim.configs.setServerAvailable(config, github ?? "", true);
    const again = await trigger(api, config);
    const notAccessible = again.skipped.filter((s: { reason: string }) => s.reason === "not_accessible");
    expect(notAccessible.map((s: { auth_status: string }) => s.auth_status)).toEqual([
      "not_authenticated",
      "needs_tenant_admin",
      "not_syncable",
    ]);
  });

  it("leaves users who left out of an all-users config entirely", async () => {
    const { sim, api } = await startTestSimulator({ users: 3 });
    sim.people.leaveProject("user2@example.com");
    const body = await trigger(api, sim.syncConfigId);
    expect(body.runs.map((r: { user_email: string }) => r.user_email)).toEqual([
      "user1@example.com",
      "user3@example.com",
    ]);
    expect(body.skipped_count).toBe(0);
  });

  it("lists the first 100 skipped pairs and counts them all", async () => {
    const { sim, api } = await startTestSimulator({
      users: 60,
      serversPerType: { notion: 4, github: 4 },
      docs: 10,
    });
    const config = sim.configs.create({ userEmails: sim.users });
    for (const email of sim.users.slice(1)) sim.people.leaveProject(email);
    const body = await trigger(api, config);
    expect(body.runs).toHaveLength(1);
    expect(body.skipped).toHaveLength(100);
    expect(body.skipped_count).toBe(59 * 8);
  });

  it("refuses more than 500 user x server pairs with 400 and starts nothing", async () => {
    const { sim, api } = await startTestSimulator({
      users: 51,
      serversPerType: { notion: 5, github: 5 },
      docs: 10,
    });
    const response = await api.post("/sync-task", { sync_config_id: sim.syncConfigId });
    expect(response.status).toBe(400);
    expect(response.body.detail).toMatch(/510/);
    expect((await api.get("/sync-task")).body.items).toHaveLength(0);
    sim.people.leaveProject("user51@example.com");
    expect((await api.post("/sync-task", { sync_config_id: sim.syncConfigId })).status).toBe(201);
  });

  it("refuses with 400 when no user can reach any server", async () => {
    const { sim, api } = await startTestSimulator({ users: 1 });
    for (const server of sim.servers)
      sim.people.setAuth("user1@example.com", server.server_instance_id, "not_authenticated");
    const response = await api.post("/sync-task", { sync_config_id: sim.syncConfigId });
    expect(response.status).toBe(400);
    expect(typeof response.body.detail).toBe("string");
  });

  it("answers 409 with the reason while the service cannot start, 404 for an unknown config", async () => {
    const { sim, api } = await startTestSimulator();
    sim.setCannotStart("Another sync of this config is still starting.");
    const refused = await api.post("/sync-task", { sync_config_id: sim.syncConfigId });
    expect(refused).toMatchObject({
      status: 409,
      body: { detail: "Another sync of this config is still starting." },
    });
    sim.setCannotStart(null);
    expect((await api.post("/sync-task", { sync_config_id: sim.syncConfigId })).status).toBe(201);
    expect((await api.post("/sync-task", { sync_config_id: "nope" })).status).toBe(404);
  });

  it("accepts only sync_config_id, since and skill_ref (422 otherwise) and validates since", async () => {
    const { sim, api } = await startTestSimulator();
    const extra = await api.post("/sync-task", { sync_config_id: sim.syncConfigId, full: true });
    expect(extra.status).toBe(422);
    expect(extra.body.detail[0]).toMatchObject({ type: "extra_forbidden", loc: ["body", "full"] });
    expect((await api.post("/sync-task", {})).status).toBe(422);
    expect(
      (await api.post("/sync-task", { sync_config_id: sim.syncConfigId, since: "yesterday" })).status,
    ).toBe(422);
    expect((await api.get("/sync-task")).body.items).toHaveLength(0);
    const ok = await api.post("/sync-task", {
      sync_config_id: sim.syncConfigId,
      since: "2026-01-01T00:00:00+00:00",
      skill_ref: "crawl-v2",
    });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({
      since: "2026-01-01T00:00:00+00:00",
      resolved_skill: { skill_ref: "crawl-v2" },
    });
  });

  it("refuses a since naming a day its month does not have (422), starting nothing", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual" });
    for (const since of ["2026-02-30T00:00:00Z", "2026-04-31", "2025-02-29T12:00:00+02:00"]) {
      const refused = await api.post("/sync-task", { sync_config_id: sim.syncConfigId, since });
      expect({ since, status: refused.status }).toEqual({ since, status: 422 });
      expect(refused.body.detail[0]).toMatchObject({ loc: ["body", "since"] });
    }
    expect((await api.get("/sync-task")).body.items).toHaveLength(0);
    const leapDay = await trigger(api, sim.syncConfigId, { since: "2024-02-29T00:00:00Z" });
    expect(leapDay.since).toBe("2024-02-29T00:00:00Z");
  });

  it("stamps each trigger's runs with the simulator clock, later triggers later", async () => {
    const { sim, api } = await startTestSimulator();
    sim.clock.set(new Date("2026-03-01T12:00:00Z"));
    const first = await trigger(api, sim.syncConfigId);
    const second = await trigger(api, sim.syncConfigId);
    const a = await api.get(`/sync-task/${first.runs[0].sync_id}`);
    const b = await api.get(`/sync-task/${second.runs[0].sync_id}`);
    expect(a.body.created_at).toBe("2026-03-01T12:00:00+00:00");
    expect(Date.parse(b.body.created_at)).toBeGreaterThan(Date.parse(a.body.created_at));
  });
});
