import { describe, expect, it } from "vitest";
import { startTestSimulator, trigger } from "../../helpers/simulator.js";

describe("sync configs", () => {
  it("reads the default config: every server with source_type and available, all users", async () => {
    const { sim, api } = await startTestSimulator();
    const { status, body } = await api.get(`/sync-configs/${sim.syncConfigId}`);
    expect(status).toBe(200);
    expect(body).toMatchObject({ id: sim.syncConfigId, project_id: sim.projectId, all_users: true });
    expect(body.servers).toEqual(
      sim.servers.map((s) => ({
        server_instance_id: s.server_instance_id,
        server_name: s.server_name,
        display_name: s.display_name,
        source_type: s.source_type,
        available: true,
      })),
    );
  });

  it("creates a config (201) and reads it back", async () => {
    const { sim, api } = await startTestSimulator();
    const created = await api.post("/sync-configs", {
      project_id: sim.projectId,
      name: "Wiki only",
      instructions: "Only the wiki.",
      server_instance_ids: [sim.servers[0]?.server_instance_id],
      user_emails: ["user1@example.com", "user2@example.com"],
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: "Wiki only",
      all_users: false,
      user_emails: ["user1@example.com", "user2@example.com"],
    });
    const read = await api.get(`/sync-configs/${created.body.id}`);
    expect(read.body.servers).toHaveLength(1);
    expect(read.body.instructions).toBe("Only the wiki.");
  });

  it("refuses bad server and user lists with 400, an unknown project with 404, a taken name with 409", async () => {
    const { sim, api } = await startTestSimulator({ serversPerType: { notion: 6, github: 5 } });
    const ids = sim.servers.map((s) => s.server_instance_id);
    const base = { project_id: sim.projectId, name: "A", instructions: "x", all_users: true };
    const cases: [Record<string, unknown>, number][] = [
      [{ ...base, server_instance_ids: [] }, 400],
      [{ ...base, server_instance_ids: ids }, 400], // 11 servers
      [{ ...base, server_instance_ids: ["unknown-server"] }, 400],
      [{ ...base, server_instance_ids: [ids[0], ids[0]] }, 400],
      [{ ...base, all_users: false, user_emails: [], server_instance_ids: [ids[0]] }, 400],
      [
        { ...base, all_users: false, user_emails: ["stranger@example.com"], server_instance_ids: [ids[0]] },
        400,
      ],
      [{ ...base, user_emails: ["user1@example.com"], server_instance_ids: [ids[0]] }, 400], // both
      [{ ...base, instructions: "x".repeat(50_001), server_instance_ids: [ids[0]] }, 400],
      [{ ...base, project_id: "no-such-project", server_instance_ids: [ids[0]] }, 404],
      [{ ...base, name: "All servers, all users", server_instance_ids: [ids[0]] }, 409],
      [{ ...base, server_instance_ids: "not-a-list" }, 422],
      [{ name: "B", instructions: "x", server_instance_ids: [ids[0]], all_users: true }, 422],
    ];
    for (const [body, expected] of cases) {
      const response = await api.post("/sync-configs", body);
      expect({ body, status: response.status }).toEqual({ body, status: expected });
      expect(response.body.detail).toBeDefined();
    }
    const ten = await api.post("/sync-configs", { ...base, server_instance_ids: ids.slice(0, 10) });
    expect(ten.status).toBe(201);
  });

  it("lists configs newest first with an opaque cursor", async () => {
    const { sim, api } = await startTestSimulator();
    for (const name of ["one", "two", "three"]) {
      sim.clock.advance(1000);
      sim.configs.create({ name });
    }
    const first = await api.get("/sync-configs", { project_id: sim.projectId, size: 2 });
    expect(first.status).toBe(200);
    expect(first.body.items.map((c: { name: string }) => c.name)).toEqual(["three", "two"]);
    expect(first.body.meta).toMatchObject({ size: 2, total: 4, has_next: true, has_prev: false });
    const second = await api.get("/sync-configs", {
      project_id: sim.projectId,
      size: 2,
      cursor: first.body.meta.next_cursor,
    });
    expect(second.body.items.map((c: { name: string }) => c.name)).toEqual(["one", "All servers, all users"]);
    expect(second.body.meta).toMatchObject({ has_next: false, next_cursor: null, has_prev: true });
    sim.faults.inject("GET /sync-configs", { kind: "light-items" });
    const light = await api.get("/sync-configs", { project_id: sim.projectId, size: 2 });
    expect(light.body.items).toEqual([
      { id: expect.any(String), name: "three", created_at: expect.any(String) },
      { id: expect.any(String), name: "two", created_at: expect.any(String) },
    ]);
    expect(light.body.meta).toEqual(first.body.meta);
    expect((await api.get("/sync-configs", { cursor: "garbage!" })).status).toBe(400);
    expect((await api.get("/sync-configs", { project_id: "nope" })).status).toBe(404);
  });

  it("replaces every field with PUT; a missing field is 422; only future triggers see it", async () => {
    const { sim, api } = await startTestSimulator();
    const [notion, github] = sim.servers;
    const before = await trigger(api, sim.syncConfigId);
    const replaced = await api.put(`/sync-configs/${sim.syncConfigId}`, {
      name: "Renamed",
      instructions: "New instructions",
      server_instance_ids: [github?.server_instance_id],
      all_users: false,
      user_emails: ["user2@example.com"],
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({
      name: "Renamed",
      all_users: false,
      user_emails: ["user2@example.com"],
    });
    expect(replaced.body.servers.map((s: { source_type: string }) => s.source_type)).toEqual(["github"]);
    const oldRun = await api.get(`/sync-task/${before.runs[0].sync_id}`);
    expect(oldRun.body.sources).toHaveLength(2);
    const after = await trigger(api, sim.syncConfigId);
    expect(after.runs).toHaveLength(1);
    expect(after.runs[0]).toMatchObject({ user_email: "user2@example.com" });
    expect(after.runs[0].sources.map((s: { source: string }) => s.source)).toEqual(["github"]);
    const partial = await api.put(`/sync-configs/${sim.syncConfigId}`, {
      name: "Again",
      instructions: "x",
      server_instance_ids: [notion?.server_instance_id],
    });
    expect(partial.status).toBe(422);
    expect((await api.put("/sync-configs/unknown", replaced.body)).status).toBe(404);
  });

  it("deletes a config; its runs and exports stay readable, triggering it is 404", async () => {
    const { sim, api } = await startTestSimulator();
    const started = await trigger(api, sim.syncConfigId);
    sim.runs.finishAll();
    expect((await api.del(`/sync-configs/${sim.syncConfigId}`)).status).toBe(204);
    expect((await api.get(`/sync-configs/${sim.syncConfigId}`)).status).toBe(404);
    expect((await api.del(`/sync-configs/${sim.syncConfigId}`)).status).toBe(404);
    const syncId = started.runs[0].sync_id;
    expect((await api.get(`/sync-task/${syncId}`)).status).toBe(200);
    expect((await api.get(`/sync-task/${syncId}/export`)).status).toBe(200);
    expect((await api.get("/sync-task", { sync_config_id: sim.syncConfigId })).body.items).toHaveLength(3);
    expect((await api.post("/sync-task", { sync_config_id: sim.syncConfigId })).status).toBe(404);
  });

  it("refuses create, replace and trigger while premium is off (403 naming Background Sync); reads and delete work", async () => {
    const { sim, api } = await startTestSimulator();
    sim.setPremium(false);
    const body = {
      project_id: sim.projectId,
      name: "X",
      instructions: "x",
      server_instance_ids: [sim.servers[0]?.server_instance_id],
      all_users: true,
      user_emails: [],
    };
    for (const response of [
      await api.post("/sync-configs", body),
      await api.put(`/sync-configs/${sim.syncConfigId}`, body),
      await api.post("/sync-task", { sync_config_id: sim.syncConfigId }),
    ]) {
      expect(response.status).toBe(403);
      expect(response.body.detail).toMatch(/Background Sync/);
      expect(response.body.detail).toMatch(/premium feature/i);
    }
    expect((await api.get(`/sync-configs/${sim.syncConfigId}`)).status).toBe(200);
    expect((await api.get("/sync-configs")).status).toBe(200);
    expect((await api.get(`/sync-configs/${sim.syncConfigId}/access`)).status).toBe(200);
    expect((await api.get("/sync-task")).status).toBe(200);
    expect((await api.del(`/sync-configs/${sim.syncConfigId}`)).status).toBe(204);
    sim.setPremium(true);
    expect((await api.post("/sync-configs", body)).status).toBe(201);
  });

  it("can refuse with 409 instead of 403 while premium is off (the status is undocumented); runs, transcripts and exports stay readable", async () => {
    const { sim, api } = await startTestSimulator({ users: 1 });
    const { runs } = (await api.post("/sync-task", { sync_config_id: sim.syncConfigId })).body;
    const syncId = runs[0].sync_id;
    sim.runs.finishAll();
    sim.setPremium(false, { status: 409 });
    const refused = await api.post("/sync-task", { sync_config_id: sim.syncConfigId });
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toMatch(/Background Sync/);
    expect((await api.put(`/sync-configs/${sim.syncConfigId}`, {})).status).toBe(409);
    expect((await api.get(`/sync-task/${syncId}`)).status).toBe(200);
    expect((await api.get(`/sync-task/${syncId}/export`)).status).toBe(200);
    const source = runs[0].sources[0].source;
    expect((await api.get(`/sync-task/${syncId}/transcript`, { source })).status).toBe(200);
    sim.setPremium(false);
    expect((await api.post("/sync-task", { sync_config_id: sim.syncConfigId })).status).toBe(403);
  });

  it("shows a renamed server's new names in the syncable servers and in the configs that use it", async () => {
    const { sim, api } = await startTestSimulator();
    const github = sim.servers[1]?.server_instance_id ?? "";
    sim.renameServer(github, { display_name: "Team Wiki" });
    const { body } = await api.get("/sync-configs/sources", { project_id: sim.projectId });
    expect(body.sources.map((s: { display_name: string }) => s.display_name)).toEqual([
      "Team Wiki",
      "Team Wiki",
    ]);
    expect(body.sources[1]).toMatchObject({ server_instance_id: github, server_name: "GitHub" });
    const config = await api.get(`/sync-configs/${sim.syncConfigId}`);
    expect(config.body.servers[1]).toMatchObject({ server_name: "GitHub", display_name: "Team Wiki" });
  });

  it("reports a paused server as available: false", async () => {
    const { sim, api } = await startTestSimulator();
    const github = sim.servers[1]?.server_instance_id ?? "";
    sim.configs.setServerAvailable(sim.syncConfigId, github, false);
    const { body } = await api.get(`/sync-configs/${sim.syncConfigId}`);
    expect(body.servers.map((s: { available: boolean }) => s.available)).toEqual([true, false]);
  });
});

describe("access check", () => {
  it("shows every auth status and project_user, with accessible derived from them", async () => {
    const { sim, api } = await startTestSimulator({ users: 8 });
    const notion = sim.servers[0]?.server_instance_id ?? "";
    const statuses = [
      "authenticated",
      "shared_auth",
      "no_auth_required",
      "not_authenticated",
      "needs_project_admin",
      "needs_tenant_admin",
      "not_syncable",
    ] as const;
    for (const [i, status] of statuses.entries())
      sim.people.setAuth(`user${i + 1}@example.com`, notion, status);
    const config = sim.configs.create({ userEmails: sim.users });
    sim.people.leaveProject("user8@example.com");
    const { status, body } = await api.get(`/sync-configs/${config}/access`, { size: 100 });
    expect(status).toBe(200);
    expect(body.meta).toMatchObject({ total: 8, has_next: false, next_cursor: null });
    const byUser = new Map(body.items.map((item: { user_email: string }) => [item.user_email, item]));
    statuses.forEach((authStatus, i) => {
      expect(byUser.get(`user${i + 1}@example.com`)).toMatchObject({
        project_user: true,
        servers: expect.arrayContaining([
          { server_instance_id: notion, auth_status: authStatus, accessible: i < 3 },
        ]),
      });
    });
    expect(byUser.get("user8@example.com")).toEqual({
      user_email: "user8@example.com",
      project_user: false,
      servers: sim.servers.map(({ server_instance_id }) => ({
        server_instance_id,
        auth_status: "not_authenticated",
        accessible: false,
      })),
    });
  });

  it("reports every server of a user who left the project as not_authenticated, whatever their auth was", async () => {
    const { sim, api } = await startTestSimulator();
    sim.people.joinProject("user3@example.com");
    const [notion, paused] = sim.servers.map((s) => s.server_instance_id);
    const config = sim.configs.create({ userEmails: ["user1@example.com", "user3@example.com"] });
    sim.configs.setServerAvailable(config, paused ?? "", false);
    sim.people.leaveProject("user3@example.com");
    const { body } = await api.get(`/sync-configs/${config}/access`);
    expect(body.items[1]).toEqual({
      user_email: "user3@example.com",
      project_user: false,
      servers: [
        { server_instance_id: notion, auth_status: "not_authenticated", accessible: false },
        { server_instance_id: paused, auth_status: "not_authenticated", accessible: false },
      ],
    });
    expect(body.items[0].servers[0]).toEqual({
      server_instance_id: notion,
      auth_status: "authenticated",
      accessible: true,
    });
  });

  it("reports a server paused in the config as not_syncable and not accessible, as the trigger skips it", async () => {
    const { sim, api } = await startTestSimulator({ users: 2 });
    const [open, paused] = sim.servers.map((s) => s.server_instance_id);
    const config = sim.configs.create({ serverIds: [open ?? "", paused ?? ""] });
    sim.configs.setServerAvailable(config, paused ?? "", false);
    const { body } = await api.get(`/sync-configs/${config}/access`);
    for (const item of body.items) {
      expect(item.servers).toEqual([
        expect.objectContaining({ server_instance_id: open, accessible: true }),
        { server_instance_id: paused, auth_status: "not_syncable", accessible: false },
      ]);
    }
    const skipped = (await trigger(api, config)).skipped;
    expect(
      skipped.map((s: { server_instance_id: string; reason: string }) => [s.server_instance_id, s.reason]),
    ).toEqual(body.items.map(() => [paused, "not_syncable"]));
  });

  it("drops users who left from an all-users config and pages with a cursor", async () => {
    const { sim, api } = await startTestSimulator({ users: 5 });
    sim.people.leaveProject("user3@example.com");
    const first = await api.get(`/sync-configs/${sim.syncConfigId}/access`, { size: 2 });
    expect(first.body.items.map((i: { user_email: string }) => i.user_email)).toEqual([
      "user1@example.com",
      "user2@example.com",
    ]);
    expect(first.body.meta).toMatchObject({ size: 2, total: 4, has_next: true });
    const second = await api.get(`/sync-configs/${sim.syncConfigId}/access`, {
      size: 2,
      cursor: first.body.meta.next_cursor,
    });
    expect(second.body.items.map((i: { user_email: string }) => i.user_email)).toEqual([
      "user4@example.com",
      "user5@example.com",
    ]);
    expect(second.body.meta).toMatchObject({ has_next: false, has_prev: true });
    expect((await api.get("/sync-configs/unknown/access")).status).toBe(404);
  });
});
