/**
 * What `sync` prints for a script or a person: keys and rows counted apart, every failure in
 * `errors`, a JSON object even when the database is in use, a dry run's result said once.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../../src/store/sqlite/open.js";
import { TEST_DIALECT } from "../../helpers/dialect.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { type RewritingProxy, startRewritingProxy } from "../../helpers/rewriting-proxy.js";
import { buildOnce } from "../daemon/setup.js";

let h: Harness | undefined;
let proxy: RewritingProxy | undefined;
beforeAll(buildOnce);
afterEach(async () => {
  await h?.close();
  await proxy?.close();
  h = undefined;
  proxy = undefined;
});

const count = (harness: Harness, sql: string) => harness.query<{ n: number }>(sql)[0]?.n ?? -1;

describe("sync output", () => {
  it("counts keys (new, changed, unchanged) apart from exported rows", async () => {
    h = await createHarness({ sim: { docs: 40 } });
    const first = await h.cli(["sync", "--json"]);
    expect(first.code, first.stderr).toBe(0);
    const keys = count(h, "SELECT count(*) AS n FROM resources");
    const rows = count(h, "SELECT count(*) AS n FROM resource_access");
    expect(rows).toBeGreaterThan(keys); // keys shared by several users: the case that misled
    const [cold] = JSON.parse(first.stdout).mirrors;
    expect(cold.keys).toEqual({ new: keys, changed: 0, unchanged: 0 });
    expect(cold.counts.upserted + cold.counts.unchanged).toBe(rows);

    const edited = h.sim.docs.list().find((d) => d.visibleTo.length > 1 && !d.deleted);
    if (!edited) throw new Error("no shared document");
    h.sim.docs.edit(edited.docId);
    const again = await h.cli(["sync", "--full"]);
    expect(again.code, again.stderr).toBe(0);
    const [header, values] = again.stdout.split("\n").map((line) => line.trim().split(/\s+/));
    const cell = (name: string) => values?.[header?.indexOf(name) ?? -1];
    expect(cell("rows")).toBe(String(rows));
    expect([cell("new"), cell("changed"), cell("unchanged")]).toEqual(["0", "1", String(keys - 1)]);
  });

  it("counts the keys of the whole pass when a new process resumes it", async () => {
    h = await createHarness({ sim: { users: 1, docs: 1200 } });
    const killed = await h.cli(["sync"], { SYNCMIRROR_CRASH_AT: "between-pages:1" });
    expect(killed.code).not.toBe(0);
    expect(count(h, "SELECT count(*) AS n FROM resources")).toBe(250);
    const resumed = await h.cli(["sync", "--json"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    const [summary] = JSON.parse(resumed.stdout).mirrors;
    expect(summary.resumed).toBe(true);
    expect(summary.keys).toEqual({ new: 1200, changed: 0, unchanged: 0 });
  });

  it("counts a key once when its content moves between two runs of the same pass", async () => {
    proxy = await startRewritingProxy();
    h = await createHarness({ sim: { users: 2, docs: 30 }, api: { base_url: proxy.baseUrl } });
    proxy.target = h.sim.baseUrl;
    const shared = h.sim.docs.list().find((d) => d.visibleTo.length > 1 && !d.deleted);
    if (!shared) throw new Error("no shared document");
    let movedKey: string | undefined;
    // Whichever run's first page is served first carries another content hash for one shared key.
    proxy.rewrites.push((body) => {
      const page = JSON.parse(body) as { resources: { key: string; content_hash: string }[] };
      const moved = page.resources.find((r) => r.key === shared.key);
      if (!moved) throw new Error("the shared document is not on the first page");
      moved.content_hash = `${moved.content_hash}-moved`;
      movedKey = moved.key;
      return JSON.stringify(page);
    });
    const r = await h.cli(["sync", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const [summary] = JSON.parse(r.stdout).mirrors;
    const keys = count(h, "SELECT count(*) AS n FROM resources");
    expect(movedKey).toBeDefined();
    expect(summary.counts.upserted).toBe(keys + 1); // the moved key was written twice
    expect(summary.keys).toEqual({ new: keys, changed: 0, unchanged: 0 });
  });

  it("a dry run prints its result once", async () => {
    h = await createHarness({ sim: { docs: 20 } });
    expect((await h.cli(["sync"])).code).toBe(0);
    const r = await h.cli(["sync", "--full", "--dry-run"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.match(/would revoke/g)).toHaveLength(1);
  });

  it("--json on a failed pass puts the error in errors, not only in message", async () => {
    h = await createHarness({ sim: { docs: 10 }, maxAttempts: 1 });
    h.sim.faults.inject("GET /sync-task", { kind: "503", times: Number.POSITIVE_INFINITY });
    const r = await h.cli(["sync", "--json"]);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out.outcome).toBe("not_all_succeeded");
    const [mirror] = out.mirrors;
    expect(mirror.outcome).toBe("failed");
    expect(mirror.errors).toEqual([
      {
        at: expect.any(String),
        sync_id: null,
        user_email: null,
        source: null,
        error: mirror.message,
        replica: expect.stringMatching(/:\d+$/),
      },
    ]);
  });

  it("--json lists a FAILED or INCOMPLETE source's error, as history lists it for the same pass", async () => {
    h = await createHarness({ sim: { docs: 20 } });
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id as string;
    h.sim.setOutcome(
      { user: "user1@example.com", server_instance_id: notion },
      { task: "FAILED", error: "Notion answered 502", times: 1 },
    );
    h.sim.setOutcome(
      { user: "user2@example.com", server_instance_id: notion },
      { task: "INCOMPLETE", times: 1 },
    );
    const r = await h.cli(["sync", "--json"]);
    expect(r.code).toBe(1);
    const [mirror] = JSON.parse(r.stdout).mirrors;
    expect(mirror.outcome).toBe("partial");
    const errors = mirror.errors as { user_email: string; source: string; error: string }[];
    expect(errors.map((e) => [e.user_email, e.source, e.error.split(":")[0]]).sort()).toEqual([
      ["user1@example.com", "notion", "FAILED"],
      ["user2@example.com", "notion", "INCOMPLETE"],
    ]);
    expect(errors.find((e) => e.user_email === "user1@example.com")?.error).toBe(
      "FAILED: Notion answered 502",
    );
    const history = await h.cli(["history", "--json"]);
    const [pass] = JSON.parse(history.stdout).passes;
    expect(pass.trigger_id).toBe(mirror.trigger_id);
    expect(errors).toEqual(pass.errors);
  });

  // The SQLite writer lock; on PostgreSQL many processes share the database (leases, not a lock).
  it.skipIf(TEST_DIALECT === "postgres")(
    "--json with the database in use prints an object naming the error, exit 1",
    async () => {
      h = await createHarness({ sim: { docs: 10 } });
      const held = openDatabase(h.dbPath, { lock: true });
      try {
        const r = await h.cli(["sync", "--json"]);
        expect(r.code).toBe(1);
        expect(JSON.parse(r.stdout)).toEqual({
          outcome: "not_all_succeeded",
          error: {
            code: "DB_LOCKED",
            message: expect.stringContaining("in use by another syncmirror process"),
          },
          mirrors: [],
        });
      } finally {
        held.close();
      }
    },
  );
});
