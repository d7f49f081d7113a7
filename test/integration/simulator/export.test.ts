import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { type Body, exportAll, startTestSimulator, trigger } from "../../helpers/simulator.js";

/** Field sets of examples/export-page.json. */
const RESOURCE_KEYS = [
  "key",
  "source",
  "source_type",
  "server_instance_id",
  "native_id",
  "type",
  "title",
  "url",
  "modified_at",
  "fetched_at",
  "content",
  "content_status",
  "fields",
  "metadata",
  "relations",
  "attachments",
  "content_hash",
  "provenance",
];
const SOURCE_KEYS = [
  "source",
  "source_type",
  "server_name",
  "server_instance_id",
  "task_id",
  "session_id",
  "task_status",
  "rules_version",
  "resolved_by",
  "status",
  "counts",
  "config_warnings",
  "diagnostics",
];
const COUNT_KEYS = [
  "resources_seen",
  "included",
  "exported",
  "excluded",
  "undecided",
  "unresolved",
  "unmatched_tool_calls",
  "skipped_unchanged",
  "content_fetch_failed",
];
const FIRST_PAGE_LISTS = ["excluded", "undecided", "unresolved_requests", "unmatched_tool_calls"];

const sorted = (values: string[]) => [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
const keysOfPages = (pages: Body[]) => pages.flatMap((p) => p.resources.map((r: { key: string }) => r.key));

/** An independent canonical JSON: keys sorted at every depth. */
function canonical(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : 1));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
}

async function finishedRun(options: Parameters<typeof startTestSimulator>[0] = {}, since?: string) {
  const { sim, api } = await startTestSimulator({ lifecycle: "manual", ...options });
  const body = await trigger(api, sim.syncConfigId, since === undefined ? {} : { since });
  sim.runs.finishAll();
  return { sim, api, syncId: body.runs[0].sync_id as string, trigger: body };
}

describe("GET /sync-task/{id}/export", () => {
  it("answers 409 with each source's status until the run finishes", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual" });
    const { runs } = await trigger(api, sim.syncConfigId);
    const syncId = runs[0].sync_id;
    sim.runs.advance(syncId, "notion");
    const response = await api.get(`/sync-task/${syncId}/export`);
    expect(response.status).toBe(409);
    expect(response.body.detail).toEqual({
      message: expect.any(String),
      sources: [
        { source: "notion", status: "RUNNING" },
        { source: "github", status: "PENDING" },
      ],
    });
    sim.runs.advance(syncId, "notion");
    expect((await api.get(`/sync-task/${syncId}/export`)).status).toBe(409);
    const notion = await api.get(`/sync-task/${syncId}/export`, { source: "notion" });
    expect(notion.status).toBe(200);
    expect(notion.body.sources.map((s: { source: string }) => s.source)).toEqual(["notion"]);
    expect(notion.body.resources.every((r: { source: string }) => r.source === "notion")).toBe(true);
    expect((await api.get(`/sync-task/${syncId}/export`, { source: "github" })).status).toBe(409);
    expect((await api.get(`/sync-task/${syncId}/export`, { source: "nope" })).status).toBe(400);
    sim.runs.finishAll();
    expect((await api.get(`/sync-task/${syncId}/export`)).status).toBe(200);
  });

  it("serves resources and sources shaped like the example, keyed {source_type}:{server}:{native_id}", async () => {
    const { sim, api, syncId } = await finishedRun({ docs: 60 });
    const { body } = await api.get(`/sync-task/${syncId}/export`, { limit: 500 });
    expect(body).toMatchObject({ schema_version: 1, engine_version: 2, sync_id: syncId, since: null });
    expect(body.sources).toHaveLength(2);
    for (const source of body.sources) {
      expect(Object.keys(source).sort()).toEqual(sorted(SOURCE_KEYS));
      expect(Object.keys(source.counts).sort()).toEqual(sorted(COUNT_KEYS));
      expect(source).toMatchObject({ task_status: "COMPLETED", status: "ok", rules_version: 1 });
    }
    expect(body.resources.length).toBeGreaterThan(0);
    const serverIds = new Set(sim.servers.map((s) => s.server_instance_id));
    for (const resource of body.resources) {
      expect(Object.keys(resource).sort()).toEqual(sorted(RESOURCE_KEYS));
      expect(resource.key).toBe(
        `${resource.source_type}:${resource.server_instance_id}:${resource.native_id}`,
      );
      expect(serverIds.has(resource.server_instance_id)).toBe(true);
      expect(resource.content_hash).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(["available", "partial", "metadata_only", "fetch_failed"]).toContain(resource.content_status);
      expect(resource.fetched_at).toMatch(/Z$/);
      for (const relation of resource.relations)
        expect(relation).toMatchObject({ kind: expect.any(String), resolved: expect.any(Boolean) });
      for (const attachment of resource.attachments) {
        expect(Object.keys(attachment).sort()).toEqual(["complete", "data", "kind", "tool_call_ids"]);
      }
      const expected = createHash("sha256")
        .update(
          canonical({
            content: resource.content,
            fields: resource.fields,
            attachments: resource.attachments,
            engine_version: 2,
          }),
        )
        .digest("hex");
      expect(resource.content_hash).toBe(`sha256:${expected}`);
    }
    const counts = body.sources.map((s: { counts: { exported: number } }) => s.counts.exported);
    expect(counts.reduce((a: number, b: number) => a + b, 0)).toBe(body.page.total);
  });

  it("pages by offset and limit (default 100, max 500), sorted by key across pages and sources", async () => {
    const { api, syncId } = await finishedRun({ docs: 400, users: 1 });
    const first = await api.get(`/sync-task/${syncId}/export`);
    expect(first.body.page).toMatchObject({ offset: 0, limit: 100, next_offset: 100 });
    const total = first.body.page.total;
    expect(total).toBe(400);
    const pages = await exportAll(api, syncId, { limit: 70 });
    expect(pages).toHaveLength(Math.ceil(total / 70));
    expect(pages.at(-1).page.next_offset).toBeNull();
    const keys = keysOfPages(pages);
    expect(keys).toHaveLength(total);
    expect(new Set(keys).size).toBe(total);
    expect(keys).toEqual(sorted(keys));
    const big = await api.get(`/sync-task/${syncId}/export`, { limit: 500 });
    expect(big.body.resources).toHaveLength(400);
    expect(big.body.page.next_offset).toBeNull();
    expect((await api.get(`/sync-task/${syncId}/export`, { limit: 501 })).status).toBe(400);
    expect((await api.get(`/sync-task/${syncId}/export`, { limit: 0 })).status).toBe(400);
    expect((await api.get(`/sync-task/${syncId}/export`, { offset: -1 })).status).toBe(400);
    const past = await api.get(`/sync-task/${syncId}/export`, { offset: 1000 });
    expect(past.body.resources).toEqual([]);
    expect(past.body.page.next_offset).toBeNull();
  });

  it("puts excluded, undecided, unresolved_requests and unmatched_tool_calls on the first page only", async () => {
    const { api, syncId } = await finishedRun({ docs: 300, users: 1 });
    const [first, second] = await exportAll(api, syncId, { limit: 100 });
    for (const list of FIRST_PAGE_LISTS) {
      expect(Array.isArray(first[list])).toBe(true);
      expect(second).not.toHaveProperty(list);
    }
    expect(first.excluded.length).toBeGreaterThan(0);
    expect(first.excluded[0]).toMatchObject({ key: expect.any(String), reason: expect.any(String) });
    expect(first.unmatched_tool_calls[0]).toMatchObject({ reason: expect.any(String) });
    for (const item of first.unresolved_requests)
      expect(item).toMatchObject({ request: expect.any(String), reason: expect.any(String) });
    const excludedCount = first.sources.reduce(
      (n: number, s: { counts: { excluded: number } }) => n + s.counts.excluded,
      0,
    );
    expect(first.excluded).toHaveLength(excludedCount);
  });

  it("with since, drops resources modified before it or never, counted in skipped_unchanged", async () => {
    const since = "2025-12-01T00:00:00Z";
    const { sim, api, syncId } = await finishedRun({ docs: 400, users: 1 }, since);
    const pages = await exportAll(api, syncId, { limit: 500 });
    const page = pages[0];
    expect(page.since).toBe(since);
    for (const resource of page.resources) {
      expect(resource.modified_at).not.toBeNull();
      expect(Date.parse(resource.modified_at)).toBeGreaterThanOrEqual(Date.parse(since));
    }
    const docs = sim.docs.list();
    const recent = docs.filter((d) => d.modifiedAt !== null && Date.parse(d.modifiedAt) >= Date.parse(since));
    const nulls = docs.filter((d) => d.modifiedAt === null);
    expect(nulls.length).toBeGreaterThan(0);
    expect(page.page.total).toBe(recent.length);
    const skipped = page.sources.reduce(
      (n: number, s: { counts: { skipped_unchanged: number } }) => n + s.counts.skipped_unchanged,
      0,
    );
    expect(skipped).toBe(400 - recent.length);
    for (const source of page.sources)
      expect(source.counts.included).toBe(source.counts.exported + source.counts.skipped_unchanged);
  });

  it("reports since: null when no since was sent", async () => {
    const { api, syncId } = await finishedRun();
    expect((await api.get(`/sync-task/${syncId}/export`)).body.since).toBeNull();
  });

  it("serves the configured schema and engine versions; an engine change changes every content_hash", async () => {
    const { sim, api, syncId } = await finishedRun();
    const before = (await api.get(`/sync-task/${syncId}/export`)).body;
    sim.setExportVersions({ schema_version: "1.0", engine_version: 3 });
    const after = (await api.get(`/sync-task/${syncId}/export`)).body;
    expect(after).toMatchObject({ schema_version: "1.0", engine_version: 3 });
    expect(after.resources.map((r: { key: string }) => r.key)).toEqual(
      before.resources.map((r: { key: string }) => r.key),
    );
    before.resources.forEach((r: { content_hash: string; content: unknown }, i: number) => {
      expect(after.resources[i].content).toEqual(r.content);
      expect(after.resources[i].content_hash).not.toBe(r.content_hash);
    });
    sim.setExportVersions({ schema_version: 2 });
    expect((await api.get(`/sync-task/${syncId}/export`)).body.schema_version).toBe(2);
  });

  it("serves the same content and hash for a key in every run until the document changes", async () => {
    const { sim, api } = await startTestSimulator({ lifecycle: "manual", users: 2 });
    const a = await trigger(api, sim.syncConfigId);
    sim.runs.finishAll();
    const b = await trigger(api, sim.syncConfigId);
    sim.runs.finishAll();
    const byKey = async (syncId: string): Promise<Map<string, Body>> => {
      const { body } = await api.get(`/sync-task/${syncId}/export`, { limit: 500 });
      return new Map(body.resources.map((r: Body) => [r.key, r]));
    };
    const [a1, a2, b1] = [
      await byKey(a.runs[0].sync_id),
      await byKey(a.runs[1].sync_id),
      await byKey(b.runs[0].sync_id),
    ];
    for (const [key, resource] of a1) {
      expect(b1.get(key)?.content_hash).toBe(resource.content_hash);
      if (a2.has(key)) expect(a2.get(key)?.content_hash).toBe(resource.content_hash);
    }
  });
});

describe("dataset", () => {
  it("is seeded: the same seed gives the same documents and export, another seed differs", async () => {
    const one = await finishedRun({ seed: 7 });
    const two = await finishedRun({ seed: 7 });
    const three = await finishedRun({ seed: 8 });
    const page = async (run: { api: Body; syncId: string }) =>
      (await run.api.get(`/sync-task/${run.syncId}/export`, { limit: 500 })).body.resources;
    const [r1, r2, r3] = [await page(one), await page(two), await page(three)];
    expect(r1.map((r: Body) => [r.native_id, r.content_hash])).toEqual(
      r2.map((r: Body) => [r.native_id, r.content_hash]),
    );
    expect(r1.map((r: Body) => r.native_id)).not.toEqual(r3.map((r: Body) => r.native_id));
    expect(one.sim.servers).toEqual(two.sim.servers);
  });

  it("mixes types per source type, null modified times, overlapping visibility and sizes from ~200 B to tens of KB", async () => {
    const {
      sim,
      api,
      trigger: started,
    } = await finishedRun({
      docs: 2000,
      serversPerType: { notion: 1, google_drive: 1, google_docs: 1, github: 1 },
    });
    const docs = sim.docs.list();
    const typesBy = (sourceType: string) =>
      new Set(docs.filter((d) => d.key.startsWith(`${sourceType}:`)).map((d) => d.type));
    expect(typesBy("notion")).toEqual(new Set(["page", "database", "data_source"]));
    expect(typesBy("google_drive")).toEqual(new Set(["document", "spreadsheet", "file"]));
    expect(typesBy("google_docs")).toEqual(new Set(["document", "spreadsheet", "file"]));
    expect(typesBy("github")).toEqual(new Set(["issue", "pull_request"]));
    const nullShare = docs.filter((d) => d.modifiedAt === null).length / docs.length;
    expect(nullShare).toBeGreaterThan(0.02);
    expect(nullShare).toBeLessThan(0.09);
    expect(docs.every((d) => d.visibleTo.length > 0)).toBe(true);
    expect(docs.filter((d) => d.visibleTo.length > 1).length).toBeGreaterThan(docs.length / 3);
    const pages = await exportAll(api, started.runs[0].sync_id, { limit: 500 });
    const sizes = pages
      .flatMap((p) => p.resources)
      .filter((r: Body) => r.content_status === "available")
      .map((r: Body) => r.content.text.length)
      .sort((a: number, b: number) => a - b);
    const median = sizes[Math.floor(sizes.length / 2)];
    expect(sizes[0]).toBeLessThan(1000);
    expect(sizes.at(-1)).toBeGreaterThan(10_000);
    expect(median).toBeGreaterThan(1500);
    expect(median).toBeLessThan(6000);
  });
});
