/**
 * docs/console-history.md, problems: through real HTTP to the simulator and the suite's store, each
 * kind appears with what it concerns, the reason and when it was first and last seen, and clears
 * itself when a later pass shows it fixed; `syncmirror problems --json` lists them and
 * `syncmirror_problems` counts them. (Held sweeps: approve-sweep.test.ts.)
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ProblemJson, ProblemsJson } from "../../../src/console/problems.js";
import { DECLARED_SIM, wiki, writeMirrors } from "../../helpers/declared-configs.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { type RewritingProxy, startRewritingProxy } from "../../helpers/rewriting-proxy.js";
import { buildOnce } from "../daemon/setup.js";

let h: Harness;
let proxy: RewritingProxy | undefined;
beforeAll(buildOnce);
afterEach(async () => {
  await h?.close();
  await proxy?.close();
  proxy = undefined;
});

const U1 = "user1@example.com";
const U2 = "user2@example.com";
const serverOf = (type: string) =>
  h.sim.servers.find((s) => s.source_type === type)?.server_instance_id as string;

async function problems(): Promise<ProblemsJson> {
  const r = await h.cli(["problems", "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as ProblemsJson;
}

const ofKind = async (kind: ProblemJson["kind"]) =>
  (await problems()).problems.filter((p) => p.kind === kind);

/** `syncmirror_problems{mirror="main", kind}` as the in-process passes left it. */
async function gauge(kind: string): Promise<number | undefined> {
  const metric = await h.metrics.registry.getSingleMetric("syncmirror_problems")?.get();
  return metric?.values.find((v) => v.labels.mirror === "main" && v.labels.kind === kind)?.value;
}

describe("problems", () => {
  it("lists failed and incomplete sources with the service's text until their pair's source succeeds", async () => {
    h = await createHarness({ sim: { docs: 30 } });
    const notion = serverOf("notion");
    const github = serverOf("github");
    h.sim.setOutcome(
      { user: U1, server_instance_id: notion },
      { task: "FAILED", error: "rate limited by Notion", times: 2 },
    );
    h.sim.setOutcome({ user: U2, server_instance_id: github }, { task: "INCOMPLETE", times: 1 });
    const first = await h.sync();
    expect(first.outcome).toBe("partial");
    const [failed] = await ofKind("failed_source");
    expect(failed).toMatchObject({
      mirror: "main",
      user_email: U1,
      server_instance_id: notion,
      source: "notion",
      key: null,
      reason: "FAILED: rate limited by Notion",
    });
    expect(failed?.sync_id).toBe(h.sim.runs.list().find((r) => r.user_email === U1)?.sync_id);
    expect(failed?.first_seen_at).toBe(failed?.last_seen_at);
    expect(await ofKind("incomplete_source")).toEqual([
      expect.objectContaining({
        user_email: U2,
        server_instance_id: github,
        source: "github",
        reason: expect.stringMatching(/^INCOMPLETE/),
      }),
    ]);
    expect((await problems()).counts.main).toMatchObject({
      failed_source: 1,
      incomplete_source: 1,
      rejected_row: 0,
    });
    expect(await gauge("failed_source")).toBe(1);
    expect(await gauge("incomplete_source")).toBe(1);

    await h.sync();
    const [again] = await ofKind("failed_source");
    expect(again?.first_seen_at, "the first sighting is kept").toBe(failed?.first_seen_at);
    expect(again?.last_seen_at).not.toBe(failed?.last_seen_at);
    expect(await ofKind("incomplete_source"), "U2's source succeeded this time").toEqual([]);

    expect((await h.sync()).outcome).toBe("succeeded");
    expect((await problems()).problems).toEqual([]);
    expect(await gauge("failed_source")).toBe(0);
  });

  it("lists a pair the trigger skipped, with its reason, until the pair runs", async () => {
    h = await createHarness({ sim: { docs: 20 } });
    const notion = serverOf("notion");
    h.sim.people.setAuth(U1, notion, "not_authenticated");
    await h.sync();
    expect(await ofKind("skipped_pair")).toEqual([
      expect.objectContaining({
        user_email: U1,
        server_instance_id: notion,
        sync_id: null,
        reason: "not_accessible (not_authenticated)",
      }),
    ]);
    expect(await gauge("skipped_pair")).toBe(1);
    h.sim.people.setAuth(U1, notion, "authenticated");
    await h.sync();
    expect(await ofKind("skipped_pair")).toEqual([]);
  });

  it("lists rows rejected for their shape until the key is ingested fine, or the pair's source succeeds", async () => {
    proxy = await startRewritingProxy();
    h = await createHarness({ sim: { users: 1, docs: 0 }, api: { base_url: proxy.baseUrl } });
    proxy.target = h.sim.baseUrl;
    const notion = serverOf("notion");
    for (let i = 0; i < 5; i++)
      h.sim.docs.add({ server_instance_id: notion, visibleTo: [U1], title: `doc ${i}` });
    const keys = h.sim.docs
      .list()
      .map((d) => d.key)
      .sort();
    /** The export's first page with resource `at` missing its content_hash, and the next keyless. */
    const reject = (at: number) => (body: string) => {
      const page = JSON.parse(body) as { resources: Record<string, unknown>[] };
      delete (page.resources[at] as Record<string, unknown>).content_hash;
      if (at === 0) (page.resources[1] as Record<string, unknown>).key = 12345;
      return JSON.stringify(page);
    };
    proxy.rewrites[0] = reject(0);
    expect((await h.sync()).counts.rejected).toBe(2);
    const rows = await ofKind("rejected_row");
    expect(rows.map((p) => [p.key, p.server_instance_id, p.count])).toEqual(
      expect.arrayContaining([
        [keys[0], notion, null],
        [null, null, 1],
      ]),
    );
    expect(rows.find((p) => p.key === keys[0])?.reason).toMatch(/documented shape: content_hash/);
    const [pass] = JSON.parse((await h.cli(["history", "--json"])).stdout).passes;
    expect(pass.errors.map((e: { error: string }) => e.error)).toEqual([
      expect.stringMatching(/^2 exported row\(s\) were rejected/),
    ]);

    // The next pass ingests the first key fine but rejects another: only the first clears.
    proxy.rewrites[0] = reject(2);
    await h.sync();
    expect((await ofKind("rejected_row")).map((p) => p.key).sort()).toEqual([keys[2], null].sort());
    expect(await gauge("rejected_row")).toBe(2);

    expect((await h.sync()).outcome).toBe("succeeded");
    expect(await ofKind("rejected_row")).toEqual([]);
  });

  it("lists a declared sync config that could not be applied until an apply succeeds", async () => {
    h = await createHarness({ sim: DECLARED_SIM });
    writeMirrors(h, { main: wiki() });
    expect((await h.cli(["apply"])).code).toBe(0);
    h.sim.people.leaveProject(U2);
    writeMirrors(h, { main: wiki({ instructions: "Collect the wiki and its issues." }) });
    expect((await h.cli(["apply"])).code).toBe(1);
    expect((await h.cli(["apply"])).code).toBe(1);
    const [config] = await ofKind("config_error");
    expect(config).toMatchObject({ mirror: "main", reason: expect.stringContaining("user2@example.com") });
    expect(config?.reason).toMatch(/^the declared sync config "Wiki" could not be applied/);
    expect(Date.parse(config?.first_seen_at ?? "")).toBeLessThan(Date.parse(config?.last_seen_at ?? ""));

    writeMirrors(h, { main: wiki({ instructions: "Collect the wiki and its issues.", users: [U1] }) });
    expect((await h.cli(["apply"])).code).toBe(0);
    expect(await ofKind("config_error")).toEqual([]);
  });

  it("refuses bad parameters with exit 2", async () => {
    h = await createHarness({ sim: { docs: 5 } });
    for (const bad of [["--mirror", "nope"], ["--limit", "0"], ["--bogus"]]) {
      const r = await h.cli(["problems", ...bad]);
      expect(r.code, bad.join(" ")).toBe(2);
    }
  });
});
