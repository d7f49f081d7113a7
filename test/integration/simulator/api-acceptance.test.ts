/**
 * The service's API as an outside client sees it over plain HTTP: the shapes of
 * docs/reference/upstream-api.md's examples (required fields present, with the right JSON types) and
 * the rules the other files here leave open.
 */
import { describe, expect, it } from "vitest";
import { type Body, exportAll, startTestSimulator, trigger } from "../../helpers/simulator.js";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const string = expect.any(String);
const number = expect.any(Number);
/** How a source is named wherever it appears. */
const SOURCE_IDENTITY = {
  source: string,
  source_type: string,
  server_name: string,
  server_instance_id: string,
};
const isoOrNull = (value: unknown) => value === null || (typeof value === "string" && ISO.test(value));

describe("response shapes an outside client relies on", () => {
  it("run detail and run list carry every field of the examples with the right types", async () => {
    const { sim, api } = await startTestSimulator({ users: 1 });
    const syncId = (await trigger(api, sim.syncConfigId, { since: "2026-11-20T00:00:00Z" })).runs[0].sync_id;
    const reads: Body[] = [];
    for (let i = 0; i < 3; i++) reads.push((await api.get(`/sync-task/${syncId}`)).body);
    for (const run of reads) {
      expect(run).toMatchObject({
        sync_id: syncId,
        status: string,
        sync_config_id: sim.syncConfigId,
        trigger_id: string,
        user_email: "user1@example.com",
        instructions: string,
        since: "2026-11-20T00:00:00Z",
        created_at: expect.stringMatching(ISO),
      });
      for (const source of run.sources) {
        expect(source).toMatchObject({
          ...SOURCE_IDENTITY,
          resolved_by: string,
          config_warnings: expect.any(Array),
          task_id: string,
          status: expect.stringMatching(/^(PENDING|RUNNING|COMPLETED|INCOMPLETE|FAILED)$/),
        });
        for (const field of ["session_id", "started_at", "completed_at", "error", "summary"])
          expect(source).toHaveProperty(field);
        expect(isoOrNull(source.started_at)).toBe(true);
        expect(isoOrNull(source.completed_at)).toBe(true);
      }
    }
    const done = reads[2].sources[0];
    expect(done.summary).toEqual({
      status: string,
      counts: {
        resources_seen: number,
        included: number,
        exported: number,
        excluded: number,
        undecided: number,
        unresolved: number,
        unmatched_tool_calls: number,
        skipped_unchanged: number,
        content_fetch_failed: number,
      },
      diagnostics: { degraded: false, degraded_reasons: [] },
    });
    const list = (await api.get("/sync-task")).body;
    expect(list.meta).toEqual({
      size: number,
      total: 1,
      next_cursor: null,
      has_next: false,
      has_prev: false,
    });
    expect(list.items[0]).toMatchObject({
      sync_id: syncId,
      status: "completed",
      created_at: expect.stringMatching(ISO),
      since: "2026-11-20T00:00:00Z",
    });
  });

  it("export pages carry the example's top level, source entries and resources with the right types", async () => {
    const { sim, api } = await startTestSimulator({
      lifecycle: "manual",
      users: 1,
      docs: 300,
      serversPerType: { notion: 1, google_drive: 1, github: 1 },
    });
    const syncId = (await trigger(api, sim.syncConfigId, { since: "2025-01-01T00:00:00Z" })).runs[0].sync_id;
    sim.runs.finishAll();
    const pages = await exportAll(api, syncId, { limit: 500 });
    const [page] = pages;
    expect(page).toMatchObject({
      schema_version: 1,
      engine_version: number,
      sync_id: syncId,
      since: "2025-01-01T00:00:00Z",
      sources: expect.any(Array),
      resources: expect.any(Array),
      excluded: expect.any(Array),
      undecided: expect.any(Array),
      unresolved_requests: expect.any(Array),
      unmatched_tool_calls: expect.any(Array),
      page: { offset: 0, limit: 500, total: number, next_offset: null },
    });
    for (const source of page.sources) {
      expect(source).toMatchObject({
        ...SOURCE_IDENTITY,
        task_id: string,
        session_id: string,
        task_status: "COMPLETED",
        rules_version: number,
        resolved_by: string,
        status: expect.stringMatching(/^(ok|no_results|authentication_required|degraded|config_stale)$/),
        config_warnings: expect.any(Array),
        diagnostics: { degraded: expect.any(Boolean), degraded_reasons: expect.any(Array) },
      });
      for (const count of Object.values(source.counts)) expect(Number.isInteger(count)).toBe(true);
    }
    for (const item of page.unresolved_requests)
      expect(item).toMatchObject({ request: string, reason: string });
    for (const item of [...page.unmatched_tool_calls, ...page.undecided, ...page.excluded])
      expect(item).toMatchObject({ reason: string });
    expect(page.resources.length).toBeGreaterThan(0);
    for (const resource of page.resources) {
      expect(resource).toMatchObject({
        key: string,
        source: string,
        source_type: string,
        server_instance_id: string,
        native_id: string,
        type: string,
        title: string,
        url: string,
        fetched_at: expect.stringMatching(ISO),
        content_status: expect.stringMatching(/^(available|partial|metadata_only|fetch_failed)$/),
        fields: expect.any(Object),
        metadata: expect.any(Object),
        relations: expect.any(Array),
        attachments: expect.any(Array),
        content_hash: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
        provenance: expect.any(Object),
      });
      expect(typeof resource.modified_at === "string" && ISO.test(resource.modified_at)).toBe(true);
      if (resource.content !== null) expect(resource.content).toEqual({ format: string, text: string });
      for (const relation of resource.relations)
        expect(relation).toEqual({ kind: string, target_key: string, resolved: expect.any(Boolean) });
      for (const attachment of resource.attachments)
        expect(attachment).toEqual({
          kind: string,
          data: expect.anything(),
          complete: expect.any(Boolean),
          tool_call_ids: expect.any(Array),
        });
    }
  });

  it("trigger skips and the access check carry the examples' fields with the right types", async () => {
    const { sim, api } = await startTestSimulator({ users: 3 });
    const [notion, github] = sim.servers.map((s) => s.server_instance_id);
    const config = sim.configs.create({ userEmails: sim.users });
    sim.people.setAuth("user2@example.com", github ?? "", "not_authenticated");
    sim.people.leaveProject("user3@example.com");
    const started = await trigger(api, config);
    expect(started.skipped).toEqual([
      {
        user_email: "user2@example.com",
        server_instance_id: github,
        server_name: string,
        reason: "not_accessible",
        auth_status: "not_authenticated",
      },
      {
        user_email: "user3@example.com",
        server_instance_id: notion,
        server_name: string,
        reason: "not_a_project_user",
      },
      {
        user_email: "user3@example.com",
        server_instance_id: github,
        server_name: string,
        reason: "not_a_project_user",
      },
    ]);
    expect(started.skipped_count).toBe(3);
    const access = (await api.get(`/sync-configs/${config}/access`)).body;
    expect(access.meta).toEqual({
      size: number,
      total: 3,
      next_cursor: null,
      has_next: false,
      has_prev: false,
    });
    for (const item of access.items) {
      expect(item).toEqual({
        user_email: string,
        project_user: expect.any(Boolean),
        servers: expect.any(Array),
      });
      for (const server of item.servers)
        expect(server).toEqual({
          server_instance_id: string,
          auth_status: string,
          accessible: expect.any(Boolean),
        });
    }
  });

  it("answers an unfinished export with the example's 409 body", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual", users: 1 });
    const syncId = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    const response = await api.get(`/sync-task/${syncId}/export`);
    expect(response).toMatchObject({
      status: 409,
      body: {
        detail: {
          message: string,
          sources: [
            { source: "notion", status: "PENDING" },
            { source: "github", status: "PENDING" },
          ],
        },
      },
    });
  });

  it("gives every error answer a detail", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual", users: 1 });
    const syncId = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    const answers = [
      await api.get("/nope"),
      await api.request("PATCH", "/sync-task"),
      await api.post("/sync-task", { sync_config_id: sim.syncConfigId, skip_ref: "x" }),
      await api.post("/sync-task", { sync_config_id: "unknown" }),
      await api.get(`/sync-task/${syncId}/export`),
      await api.get(`/sync-task/${syncId}/export`, { limit: 501 }),
      await api.get(`/sync-task/${syncId}/transcript`),
      await api.post(`/sync-task/${syncId}/continue`, { message: "go" }),
      await api.get("/sync-task", { size: 101 }),
      await api.get("/sync-configs/unknown"),
      await api.request("POST", "/sync-task", { body: "[" }),
    ];
    for (const answer of answers) {
      expect(answer.status).toBeGreaterThanOrEqual(400);
      expect(answer.body.detail).toBeDefined();
      expect(["string", "object"]).toContain(typeof answer.body.detail);
    }
  });
});

describe("trigger rules", () => {
  it("refuses a misspelt skill_ref (skip_ref) and any other field, starting nothing", async () => {
    const { sim, api } = await startTestSimulator();
    for (const extra of [{ skip_ref: "crawl" }, { full: true }, { user_emails: ["user1@example.com"] }]) {
      const response = await api.post("/sync-task", { sync_config_id: sim.syncConfigId, ...extra });
      expect(response.status).toBe(422);
    }
    expect((await api.get("/sync-task")).body.items).toEqual([]);
    const plain = await trigger(api, sim.syncConfigId, { since: null });
    expect(plain).toMatchObject({
      since: null,
      resolved_skill: null,
      skill_warning: null,
      status: "pending",
    });
  });

  it("starts a trigger of exactly 500 user x server pairs", async () => {
    const { sim, api } = await startTestSimulator({
      users: 50,
      serversPerType: { notion: 5, github: 5 },
      docs: 10,
    });
    const started = await trigger(api, sim.syncConfigId);
    expect(started.runs).toHaveLength(50);
    expect(started.runs.reduce((n: number, r: Body) => n + r.sources.length, 0)).toBe(500);
  });

  it("is 400 when every user of an explicit config has left the project", async () => {
    const { sim, api } = await startTestSimulator({ users: 2 });
    const config = sim.configs.create({ userEmails: sim.users });
    for (const email of sim.users) sim.people.leaveProject(email);
    const response = await api.post("/sync-task", { sync_config_id: config });
    expect(response.status).toBe(400);
    expect(typeof response.body.detail).toBe("string");
    expect((await api.get("/sync-task")).body.items).toEqual([]);
  });

  it("keeps the trigger's status pending while its runs finish", async () => {
    const { sim, api } = await startTestSimulator({ users: 1 });
    const started = await trigger(api, sim.syncConfigId);
    sim.runs.finishAll();
    const runs = (await api.get("/sync-task", { trigger_id: started.trigger_id })).body.items;
    expect(runs.map((r: Body) => r.status)).toEqual(["completed"]);
    expect(started.status).toBe("pending");
  });

  it("uses the same source labels in the trigger, run list, run detail, export and transcript", async () => {
    const { sim, api } = await startTestSimulator({ users: 1, serversPerType: { notion: 2, github: 1 } });
    const notionB = sim.servers[1]?.server_instance_id ?? "";
    sim.renameServer(notionB, { server_name: "Eng Docs (EU) !" });
    const started = await trigger(api, sim.syncConfigId);
    const labels = ["notion-team-wiki", "notion-eng-docs-eu", "github"];
    expect(started.runs[0].sources.map((s: Body) => s.source)).toEqual(labels);
    const syncId = started.runs[0].sync_id;
    sim.runs.finishAll();
    expect((await api.get("/sync-task")).body.items[0].sources.map((s: Body) => s.source)).toEqual(labels);
    expect((await api.get(`/sync-task/${syncId}`)).body.sources.map((s: Body) => s.source)).toEqual(labels);
    const page = (await api.get(`/sync-task/${syncId}/export`, { limit: 500 })).body;
    expect(page.sources.map((s: Body) => s.source)).toEqual(labels);
    expect(new Set(page.resources.map((r: Body) => r.source))).toEqual(new Set(labels));
    for (const label of labels) {
      const one = await api.get(`/sync-task/${syncId}/export`, { source: label, limit: 500 });
      expect(one.body.resources.every((r: Body) => r.source === label)).toBe(true);
      expect(one.body.page.total).toBe(one.body.sources[0].counts.exported);
      expect((await api.get(`/sync-task/${syncId}/transcript`, { source: label })).status).toBe(200);
    }
  });
});

describe("premium feature off", () => {
  it("still serves every read: projects, syncable servers, configs, access, runs, run detail, export, transcript", async () => {
    const { sim, api } = await startTestSimulator({ users: 1 });
    const syncId = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    sim.runs.finishAll();
    sim.setPremium(false);
    const reads = [
      await api.get("/projects"),
      await api.get("/sync-configs/sources", { project_id: sim.projectId }),
      await api.get("/sync-configs", { project_id: sim.projectId }),
      await api.get(`/sync-configs/${sim.syncConfigId}`),
      await api.get(`/sync-configs/${sim.syncConfigId}/access`),
      await api.get("/sync-task", { sync_config_id: sim.syncConfigId }),
      await api.get(`/sync-task/${syncId}`),
      await api.get(`/sync-task/${syncId}/export`),
      await api.get(`/sync-task/${syncId}/transcript`, { source: "notion" }),
    ];
    expect(reads.map((r) => r.status)).toEqual(reads.map(() => 200));
    expect((await api.post("/sync-task", { sync_config_id: sim.syncConfigId })).status).toBe(403);
    expect((await api.get("/sync-task")).body.items).toHaveLength(1);
  });
});

describe("export rules", () => {
  it("sorts by key across four source types and several servers of one type; side lists on offset 0 only", async () => {
    const { sim, api } = await startTestSimulator({
      lifecycle: "manual",
      users: 1,
      docs: 500,
      serversPerType: { notion: 2, google_drive: 1, google_docs: 1, github: 2 },
    });
    const syncId = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    sim.runs.finishAll();
    const pages = await exportAll(api, syncId, { limit: 37 });
    const keys = pages.flatMap((p) => p.resources.map((r: Body) => r.key as string));
    expect(keys).toEqual([...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys).toHaveLength(pages[0].page.total);
    for (const [i, page] of pages.entries()) {
      expect(page.page).toMatchObject({ offset: i * 37, limit: 37, total: pages[0].page.total });
      for (const list of ["excluded", "undecided", "unresolved_requests", "unmatched_tool_calls"])
        expect(list in page).toBe(i === 0);
    }
  });

  it("with since, keeps a resource modified exactly at the cutoff and drops one modified a millisecond before", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual", users: 1, docs: 0 });
    const server = sim.servers[0]?.server_instance_id ?? "";
    const add = (modifiedAt: string) =>
      sim.docs.get(sim.docs.add({ server_instance_id: server, visibleTo: sim.users, modifiedAt }));
    const atCutoff = add("2026-05-01T10:00:00.000Z");
    const before = add("2026-05-01T09:59:59.999Z");
    const syncId = (await trigger(api, sim.syncConfigId, { since: "2026-05-01T12:00:00+02:00" })).runs[0]
      .sync_id;
    sim.runs.finishAll();
    const page = (await api.get(`/sync-task/${syncId}/export`, { source: "notion" })).body;
    expect(page.resources.map((r: Body) => r.key)).toEqual([atCutoff.key]);
    expect(page.sources[0].counts).toMatchObject({ included: 2, exported: 1, skipped_unchanged: 1 });
    expect(before.key).not.toBe(atCutoff.key);
  });

  it("with since, keeps each resource by its own modified_at and a source with nothing left exports nothing", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual", users: 1, docs: 100 });
    const syncId = (await trigger(api, sim.syncConfigId, { since: "2999-01-01T00:00:00Z" })).runs[0].sync_id;
    sim.runs.finishAll();
    const page = (await api.get(`/sync-task/${syncId}/export`, { limit: 500 })).body;
    expect(page.resources).toEqual([]);
    expect(page.since).toBe("2999-01-01T00:00:00Z");
    for (const source of page.sources) {
      expect(source.counts.exported).toBe(0);
      expect(source.counts.skipped_unchanged).toBe(source.counts.included);
      expect(source.counts.included).toBeGreaterThan(0);
    }
  });
});

describe("text limits count characters", () => {
  const emoji = "\u{1F600}";

  it("accepts a continue message of 50,000 characters outside the BMP, refuses 50,001", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual", users: 1 });
    sim.setOutcome({}, { task: "INCOMPLETE" });
    const syncId = (await trigger(api, sim.syncConfigId)).runs[0].sync_id;
    sim.runs.finishAll();
    const path = `/sync-task/${syncId}/continue`;
    const over = await api.post(path, { message: emoji.repeat(50_001), source: "notion" });
    expect(over.status).toBe(400);
    const exact = await api.post(path, { message: emoji.repeat(50_000), source: "notion" });
    expect(exact.status).toBe(200);
  });

  it("accepts config instructions of 50,000 characters outside the BMP, refuses 50,001", async () => {
    const { sim, api } = await startTestSimulator();
    const body = {
      project_id: sim.projectId,
      name: "Emoji",
      server_instance_ids: [sim.servers[0]?.server_instance_id],
      all_users: true,
    };
    expect((await api.post("/sync-configs", { ...body, instructions: emoji.repeat(50_001) })).status).toBe(
      400,
    );
    expect((await api.post("/sync-configs", { ...body, instructions: emoji.repeat(50_000) })).status).toBe(
      201,
    );
  });
});
