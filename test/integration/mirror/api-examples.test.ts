/**
 * Shapes the upstream API reference's own examples show (docs/reference/upstream-api.md), which
 * the simulator does not write itself: served through a rewriting proxy in front of it, and read
 * back through the built CLI and the public tables.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { describe, expect, it, onTestFinished } from "vitest";
import { EXAMPLE, startExampleUpstream } from "../../helpers/example-upstream.js";
import { pairOf } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { proxiedHarness } from "../../helpers/rewriting-proxy.js";

const U1 = "user1@example.com";
const SERVICE_ERROR = "The upstream server returned 502 for every tool call.";

describe("an export that does not list a source that FAILED (as the API's example run and its export show)", () => {
  it("ingests the other sources: their rows, access and watermarks; the failed pair keeps its access; exit 1, partial", async () => {
    const { h, proxy } = await proxiedHarness({ sim: { users: 1, docs: 20 }, maxAttempts: 1 });
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id ?? "";
    const github = h.sim.servers.find((s) => s.source_type === "github")?.server_instance_id ?? "";
    expect((await h.cli(["sync"])).code).toBe(0);
    const githubAccess = h.query(
      "SELECT key FROM resource_access WHERE server_instance_id = ? ORDER BY key",
      github,
    );
    expect(githubAccess.length).toBeGreaterThan(0);

    h.sim.setOutcome({ server_instance_id: github }, { task: "FAILED", error: SERVICE_ERROR, times: 1 });
    // A notion page changes, so the pass has something to write from the source that delivered.
    const changed = h.sim.docs
      .list()
      .find((d) => d.server_instance_id === notion && d.visibleTo.includes(U1) && !d.deleted);
    if (!changed) throw new Error("no notion document");
    h.sim.docs.edit(changed.docId, { content: "Escalate after 15 minutes." });
    proxy.rewrites[0] = (body) => {
      const page = JSON.parse(body) as { sources: { task_status: string }[] };
      return JSON.stringify({ ...page, sources: page.sources.filter((s) => s.task_status !== "FAILED") });
    };

    const full = await h.cli(["sync", "--full", "--json"]);
    expect(full.code, full.stderr).toBe(1);
    const summary = JSON.parse(full.stdout).mirrors[0];
    expect(summary.outcome).toBe("partial");
    expect(summary.counts).toMatchObject({ upserted: 1, access_revoked: 0, deleted: 0 });
    expect(JSON.stringify(summary.errors)).toContain(SERVICE_ERROR);
    const [row] = h.query<{ content_text: string }>(
      "SELECT content_text FROM resources WHERE key = ?",
      changed.key,
    );
    expect(row?.content_text).toContain("Escalate after 15 minutes.");
    expect(h.query("SELECT op FROM changes WHERE key = ? ORDER BY seq DESC LIMIT 1", changed.key)).toEqual([
      { op: "upsert" },
    ]);
    const runCreated = h.query<{ created_at: string }>(
      "SELECT created_at FROM runs ORDER BY created_at DESC LIMIT 1",
    )[0]?.created_at;
    expect(Date.parse(pairOf(h, U1, notion)?.watermark ?? "")).toBe(Date.parse(runCreated ?? ""));
    expect(pairOf(h, U1, github)?.watermark).not.toBe(pairOf(h, U1, notion)?.watermark);
    expect(
      h.query("SELECT key FROM resource_access WHERE server_instance_id = ? ORDER BY key", github),
    ).toEqual(githubAccess);
  });
});

describe("a FAILED source whose `error` in the run's detail is an object, not a string", () => {
  it("keeps the service's text in the pass's errors and problems, and the other source's rows", async () => {
    const { h, proxy } = await proxiedHarness({ sim: { users: 1, docs: 20 }, maxAttempts: 1 });
    const github = h.sim.servers.find((s) => s.source_type === "github")?.server_instance_id ?? "";
    h.sim.setOutcome({ server_instance_id: github }, { task: "FAILED", error: SERVICE_ERROR });
    proxy.runDetail = (body) => {
      const run = JSON.parse(body) as { sources: { error: unknown }[] };
      for (const s of run.sources)
        if (typeof s.error === "string") s.error = { message: s.error, code: "upstream_502" };
      return JSON.stringify(run);
    };

    const r = await h.cli(["sync", "--json"]);
    expect(r.code, r.stderr).toBe(1);
    const summary = JSON.parse(r.stdout).mirrors[0];
    expect(summary.outcome).toBe("partial");
    expect(summary.errors).toEqual([expect.objectContaining({ error: `FAILED: ${SERVICE_ERROR}` })]);
    const problems = JSON.parse((await h.cli(["problems", "--json"])).stdout);
    expect(JSON.stringify(problems)).toContain(SERVICE_ERROR);
    expect(h.query("SELECT count(*) AS n FROM resources WHERE source_type = 'notion'")).toEqual([{ n: 10 }]);
  });
});

describe("Background Sync turned off while a trigger's runs are out (reads still work)", () => {
  it("a continue refused as the feature being off leaves the INCOMPLETE source as it is: the run is exported, partial, not refused", async () => {
    const { h, proxy } = await proxiedHarness({
      sim: { users: 1, docs: 20 },
      maxAttempts: 1,
      defaults: { continue_incomplete: 1 },
    });
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id ?? "";
    const github = h.sim.servers.find((s) => s.source_type === "github")?.server_instance_id ?? "";
    h.sim.setOutcome({ server_instance_id: github }, { task: "INCOMPLETE", times: 1 });
    proxy.intercept = ({ method, path }) =>
      method === "POST" && path.endsWith("/continue")
        ? {
            status: 403,
            body: JSON.stringify({
              detail: "Background Sync is a premium feature that is turned off for this tenant.",
            }),
          }
        : undefined;

    const r = await h.cli(["sync", "--json"]);
    expect(r.code, r.stderr).toBe(1);
    const summary = JSON.parse(r.stdout).mirrors[0];
    expect(summary.outcome).toBe("partial");
    expect(h.query("SELECT count(*) AS n FROM resources WHERE source_type = 'notion'")).toEqual([{ n: 10 }]);
    expect(pairOf(h, U1, notion)?.watermark).not.toBeNull();
    expect(pairOf(h, U1, github)?.watermark).toBeNull();
  });
});

describe("server times written without a UTC offset (`2026-11-21T06:00:02`, as naive ISO 8601 writers do)", () => {
  it("are read as UTC whatever the local time zone: the next since is the run's created_at minus the overlap", async () => {
    const { h, proxy } = await proxiedHarness({
      sim: { users: 1, docs: 10 },
      defaults: { since_overlap_seconds: 60 },
    });
    const naive = (body: string) =>
      body.replace(/"created_at":"([^"]+?)(?:Z|\+00:00)"/g, '"created_at":"$1"');
    proxy.runList = naive;
    proxy.runDetail = naive;
    const local = { TZ: "America/Los_Angeles" };
    expect((await h.cli(["sync"], local)).code).toBe(0);
    const [created] = h.sim.runs.list().map((run) => Date.parse(run.created_at));
    expect(h.sim.runs.list()).toHaveLength(1);

    const r = await h.cli(["sync", "--json"], local);
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout).mirrors[0];
    expect(summary.mode).toBe("incremental");
    expect(Date.parse(summary.since)).toBe((created ?? 0) - 60_000);
  });
});

/** A harness whose mirror reads the example service (`helpers/example-upstream.ts`), not the simulator. */
async function exampleHarness() {
  const h = await createHarness({ maxAttempts: 1, mirror: { sync_config_id: EXAMPLE.syncConfigId } });
  onTestFinished(() => h.close());
  const upstream = await startExampleUpstream(h.sim.token);
  onTestFinished(() => upstream.close());
  writeFileSync(h.configPath, readFileSync(h.configPath, "utf8").replace(h.sim.baseUrl, upstream.baseUrl));
  return { h, upstream };
}

describe("the API reference's examples, served as they are", () => {
  const resourceRow = {
    key: EXAMPLE.key,
    content_hash: "sha256:9c1e5a3b7d2f4e6a8c0b2d4f6e8a0c1e3b5d7f9a1c3e5b7d9f1a3c5e7b9d1f3a",
    content_text: "# On-call handbook\n\nEscalate after 15 minutes.",
    content_format: "notion_markdown",
    content_status: "available",
    title: "On-call handbook",
    url: "https://www.notion.so/3e9a1c5b7d2f4a6c8e0b2d4f6a8c0e1f",
    type: "page",
    source_type: "notion",
    server_instance_id: EXAMPLE.notion,
    native_id: "3e9a1c5b7d2f4a6c8e0b2d4f6a8c0e1f",
    modified_at: "2026-11-20T14:31:00.000Z",
    deleted_at: null,
  };
  const accessRow = {
    mirror: "main",
    user_email: "ana@example.com",
    key: EXAMPLE.key,
    server_instance_id: EXAMPLE.notion,
    source: "notion-team-wiki",
  };
  const resources = (h: Harness) =>
    h.query(
      "SELECT key, content_hash, content_text, content_format, content_status, title, url, type, source_type, server_instance_id, native_id, modified_at, deleted_at FROM resources",
    );
  /** `sync --json`, expected to exit 1 with a partial full pass; its summary. */
  const partialFullSync = async (h: Harness) => {
    const r = await h.cli(["sync", "--json"]);
    expect(r.code, r.stderr).toBe(1);
    const summary = JSON.parse(r.stdout).mirrors[0];
    expect(summary).toMatchObject({ mode: "full", outcome: "partial" });
    return summary;
  };
  const access = (h: Harness) =>
    h.query("SELECT mirror, user_email, key, server_instance_id, source FROM resource_access");

  it("sync, the page as written (one resource of the 9 its page.total gives): the row, its access and one upsert are kept; the run fails, exit 1, partial", async () => {
    const { h, upstream } = await exampleHarness();
    upstream.notFinishedAnswers = 1;

    const summary = await partialFullSync(h);
    expect(summary.errors).toEqual([
      expect.objectContaining({ error: expect.stringMatching(/ended after 1 of the 9 resources/) }),
    ]);
    expect(resources(h)).toEqual([resourceRow]);
    expect(access(h)).toEqual([accessRow]);
    expect(h.query("SELECT key, op FROM changes")).toEqual([{ key: EXAMPLE.key, op: "upsert" }]);
    expect(pairOf(h, "ana@example.com", EXAMPLE.notion)?.watermark ?? null).toBeNull();
    for (const q of upstream.requests) expect(q.url).not.toContain(h.sim.token);
  });

  it("sync, the page whole: the FAILED source's text, ana's watermark from created_at, then an incremental from it that records nothing", async () => {
    const { h, upstream } = await exampleHarness();
    upstream.exportPage = (page) => ({ ...page, page: { ...(page.page as object), total: 1 } });

    const summary = await partialFullSync(h);
    expect(summary.errors).toEqual([
      expect.objectContaining({
        source: "github",
        error: "FAILED: The upstream server returned 502 for every tool call.",
      }),
    ]);
    expect(resources(h)).toEqual([resourceRow]);
    expect(access(h)).toEqual([accessRow]);
    expect(pairOf(h, "ana@example.com", EXAMPLE.notion)?.watermark).toBe("2026-11-21T06:00:02.000Z");
    expect(pairOf(h, "ana@example.com", EXAMPLE.github)?.watermark).toBeNull();
    const posts = () => upstream.requests.filter((q) => q.method === "POST");
    expect(posts()).toEqual([
      expect.objectContaining({ url: "/api/v1/sync-task", body: { sync_config_id: EXAMPLE.syncConfigId } }),
    ]);

    const again = await h.cli(["sync", "--json"]);
    expect(again.code, again.stderr).toBe(1);
    expect(JSON.parse(again.stdout).mirrors[0], again.stdout).toMatchObject({
      mode: "incremental",
      outcome: "partial",
    });
    expect(posts().at(-1)?.body).toEqual({
      sync_config_id: EXAMPLE.syncConfigId,
      since: "2026-11-21T05:55:02.000Z",
    });
    expect(h.query("SELECT key, op FROM changes")).toEqual([{ key: EXAMPLE.key, op: "upsert" }]);
  });

  it("sync, the page with the example's since though a full snapshot was asked for: the row is kept, the run fails, exit 1, partial", async () => {
    const { h, upstream } = await exampleHarness();
    upstream.exportPage = (page) => ({
      ...page,
      since: "2026-11-20T00:00:00Z",
      page: { ...(page.page as object), total: 1 },
    });

    const summary = await partialFullSync(h);
    expect(summary.errors).toEqual([
      expect.objectContaining({
        error: expect.stringMatching(/is date-filtered \(since 2026-11-20T00:00:00Z\)/),
      }),
    ]);
    expect(resources(h)).toEqual([resourceRow]);
    expect(access(h)).toEqual([accessRow]);
    expect(pairOf(h, "ana@example.com", EXAMPLE.notion)?.watermark ?? null).toBeNull();
  });

  it("check: the access matrix of the example access check, with its two problems, exit 1", async () => {
    const { h } = await exampleHarness();
    const r = await h.cli(["check"]);
    expect(r.stdout).toMatch(/ana@example\.com\s+yes\s+ok \(authenticated\)\s+ok \(shared_auth\)/);
    const problems = r.stdout.split("\n").filter((line) => line.includes("PROBLEM"));
    expect(problems).toEqual([
      expect.stringMatching(/ben@example\.com cannot be synced on GitHub: not_authenticated/),
      expect.stringMatching(/cy@example\.com is not a project user/),
    ]);
    expect(r.code).toBe(1);
  });
});

describe("a resource whose native_id is a number (a GitHub issue's), its key a string as always", () => {
  it("is stored with native_id as text, not rejected", async () => {
    const { h, proxy } = await proxiedHarness({ sim: { users: 1, docs: 4 } });
    proxy.rewrites[0] = (body) => {
      const page = JSON.parse(body) as { resources: { native_id: unknown; source_type: string }[] };
      for (const r of page.resources) if (r.source_type === "github") r.native_id = 4242;
      return JSON.stringify(page);
    };
    const r = await h.cli(["sync", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(h.query("SELECT DISTINCT native_id FROM resources WHERE source_type = 'github'")).toEqual([
      { native_id: "4242" },
    ]);
  });
});
