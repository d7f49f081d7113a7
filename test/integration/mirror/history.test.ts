/**
 * docs/console-history.md, history: through the real CLI on the suite's store, one entry per pass,
 * newest first, with every error it met in the service's own words: a failed or incomplete
 * source's text read from the run's detail, each failed attempt of a trigger resumed until it
 * succeeded (a rejected token, a closed port, a wrong base URL), and pages that follow the
 * `before` cursor.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { HistoryJson } from "../../../src/console/history.js";
import { freePort, spawnCli, until } from "../../helpers/daemon.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { buildOnce, editConfig } from "../daemon/setup.js";

let h: Harness;
beforeAll(buildOnce);
afterEach(async () => {
  await h?.close();
});

const U1 = "user1@example.com";
const SERVICE_TEXT = "Notion answered 502 Bad Gateway while reading database 7f3e";

async function history(args: string[] = []): Promise<HistoryJson> {
  const r = await h.cli(["history", "--json", ...args]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as HistoryJson;
}

function setBaseUrl(baseUrl: string): void {
  editConfig(h, (config) => {
    config.api = { ...(config.api as object), base_url: baseUrl };
  });
}

/** The three failures of the issue, each in a pass of its own, through the real CLI. */
async function failThreeWays(): Promise<void> {
  const wrongToken = await h.cli(["sync"], { SYNCMIRROR_TEST_TOKEN: "not-the-token" });
  expect(wrongToken.code).toBe(1);
  setBaseUrl(`http://127.0.0.1:${await freePort()}/api/v1`);
  expect((await h.cli(["sync"])).code).toBe(1);
  setBaseUrl(h.sim.baseUrl.replace(/\/api\/v1$/, "/nowhere/api/v1"));
  expect((await h.cli(["sync"])).code).toBe(1);
  h.writeConfig();
}

describe("history", () => {
  it("lists a failed source with the service's own error text, its run, user and source label", async () => {
    h = await createHarness({ sim: { docs: 20 } });
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id as string;
    h.sim.setOutcome(
      { user: U1, server_instance_id: notion },
      { task: "FAILED", error: SERVICE_TEXT, times: 1 },
    );
    const sync = await h.cli(["sync", "--json"]);
    expect(sync.code).toBe(1);
    const triggerId = JSON.parse(sync.stdout).mirrors[0].trigger_id as string;
    const run = h.sim.runs.list().find((r) => r.trigger_id === triggerId && r.user_email === U1);

    const [pass] = (await history()).passes;
    expect(pass).toMatchObject({
      mirror: "main",
      mode: "full",
      trigger_id: triggerId,
      state: "done",
      outcome: "partial",
      runs: { failed: 1, completed: h.sim.users.length - 1 },
      sources: { ok: expect.any(Number) },
      replica: { instance_id: expect.any(String), name: expect.stringMatching(/:\d+$/) },
    });
    expect(pass?.errors).toEqual([
      {
        at: expect.any(String),
        sync_id: run?.sync_id,
        user_email: U1,
        source: "notion",
        error: `FAILED: ${SERVICE_TEXT}`,
        replica: pass?.replica?.name,
      },
    ]);
    expect(pass?.duration_seconds).toBeGreaterThanOrEqual(0);
    const text = await h.cli(["history"]);
    expect(text.stdout).toContain(`error `);
    expect(text.stdout).toContain(SERVICE_TEXT);
  });

  it("lists an INCOMPLETE source with the service's own text, and problems gives the same reason", async () => {
    h = await createHarness({ sim: { docs: 20 } });
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id as string;
    const said = "Stopped at the iteration limit (100) with 7 pages left unread";
    h.sim.setOutcome({ user: U1, server_instance_id: notion }, { task: "INCOMPLETE", error: said, times: 1 });
    expect((await h.cli(["sync"])).code).toBe(1);

    const [pass] = (await history()).passes;
    expect(pass?.errors).toEqual([
      expect.objectContaining({ user_email: U1, source: "notion", error: `INCOMPLETE: ${said}` }),
    ]);
    const problems = await h.cli(["problems", "--json"]);
    expect(problems.code, problems.stderr).toBe(0);
    expect(JSON.parse(problems.stdout).problems).toEqual([
      expect.objectContaining({ kind: "incomplete_source", user_email: U1, reason: `INCOMPLETE: ${said}` }),
    ]);
  });

  it("keeps every attempt's error on a trigger resumed until it succeeds: rejected token, closed port, wrong base URL", async () => {
    h = await createHarness({ sim: { docs: 20 }, maxAttempts: 1 });
    // A trigger in flight with its runs still running: a stop leaves it for the next pass.
    h.sim.runs.hold();
    const first = spawnCli(["sync", "--config", h.configPath], h.env);
    // The intent (and so the database) is written before the POST that creates the runs.
    await until(() => h.sim.runs.list().length > 0, "the trigger's runs upstream");
    await until(
      () => h.query<{ state: string }>("SELECT state FROM triggers")[0]?.state === "active",
      "the trigger to be active",
    );
    expect((await first.stop("SIGTERM")).code).toBe(1);
    h.sim.runs.release();

    await failThreeWays();
    const done = await h.cli(["sync", "--json"]);
    expect(done.code, done.stderr).toBe(0);
    const summary = JSON.parse(done.stdout).mirrors[0];
    expect(summary).toMatchObject({ outcome: "succeeded", resumed: true });

    const { passes } = await history();
    expect(passes).toHaveLength(1);
    expect(passes[0]).toMatchObject({ trigger_id: summary.trigger_id, outcome: "succeeded", resumed: true });
    const errors = passes[0]?.errors ?? [];
    expect(errors.map((e) => [e.sync_id, e.user_email, e.source])).toEqual([
      [null, null, null],
      [null, null, null],
      [null, null, null],
    ]);
    expect(errors[0]?.error).toMatch(/token in \$SYNCMIRROR_TEST_TOKEN was rejected \(401/);
    expect(errors[1]?.error).toMatch(/ECONNREFUSED/);
    expect(errors[2]?.error).toMatch(/404/);
    expect(new Set(errors.map((e) => e.at)).size, "each attempt at its own time").toBe(3);
  });

  it("keeps every attempt's error on a trigger the service never accepted, the last one closing it", async () => {
    h = await createHarness({ sim: { docs: 20 }, maxAttempts: 1 });
    await failThreeWays();
    expect((await h.cli(["sync"])).code).toBe(0);

    const { passes } = await history();
    expect(passes.map((p) => [p.outcome, p.trigger_id === null])).toEqual([
      ["succeeded", false],
      ["failed", true],
    ]);
    const errors = passes[1]?.errors.map((e) => e.error) ?? [];
    expect(errors).toHaveLength(3);
    expect(errors[0]).toMatch(/was rejected \(401/);
    expect(errors[1]).toMatch(/ECONNREFUSED/);
    expect(errors[2]).toMatch(/api\.base_url/);
    expect(passes[1]?.message).toBe(errors[2]);
  });

  it("pages newest first with the before cursor, and refuses bad parameters", async () => {
    h = await createHarness({ sim: { docs: 10, users: 1 } });
    for (let i = 0; i < 5; i++) await h.sync({ full: i === 0 });

    const page1 = await history(["--limit", "2"]);
    const text = await h.cli(["history", "--limit", "2"]);
    expect(text.stdout.trimEnd().split("\n").at(-1), "the next page's command, runnable as printed").toBe(
      `older passes: syncmirror history --limit 2 --before ${page1.next_before} --config ${h.configPath}`,
    );
    const ids = page1.passes.map((p) => p.id);
    expect(ids).toHaveLength(2);
    expect(ids[0]).toBeGreaterThan(ids[1] as number);
    expect(page1.next_before).toBe(ids[1]);
    const page2 = await history(["--limit", "2", "--before", String(page1.next_before)]);
    const page3 = await history(["--limit", "2", "--before", String(page2.next_before)]);
    const all = [...page1.passes, ...page2.passes, ...page3.passes].map((p) => p.id);
    expect(all).toEqual((await history()).passes.map((p) => p.id));
    expect(all).toHaveLength(5);
    expect(page3.next_before).toBeNull();
    expect(page3.passes.at(-1)).toMatchObject({ mode: "full", outcome: "succeeded" });
    expect((await history(["--mirror", "main", "--limit", "500"])).passes).toHaveLength(5);
    // Above a page's 500 is a page of 500, not a refusal.
    expect(await history(["--limit", "501"])).toEqual(await history(["--limit", "500"]));
    // `before` is also a time: the passes started before it, so a page's last `started_at` pages on.
    const last = page1.passes.at(-1)?.started_at as string;
    expect(await history(["--limit", "2", "--before", last])).toEqual(page2);
    const offset = new Date(Date.parse(last)).toISOString().replace("Z", "+00:00");
    expect(await history(["--limit", "2", "--before", offset])).toEqual(page2);
    expect((await history(["--before", "2000-01-01T00:00:00Z"])).passes).toEqual([]);

    for (const bad of [
      ["--limit", "0"],
      ["--before", "x"],
      ["--before", "2026-13-01T00:00:00Z"],
      ["--mirror", "nope"],
    ]) {
      const r = await h.cli(["history", ...bad]);
      expect(r.code, bad.join(" ")).toBe(2);
      expect(r.stderr).toMatch(/--limit|--before|--mirror/);
    }
    // The wording every command and endpoint uses for a mirror the config does not declare.
    const unknown = await h.cli(["history", "--mirror", "nope"]);
    expect(unknown.stderr).toBe('syncmirror: --mirror: no mirror named "nope" in the config (known: main)\n');
  });
});
