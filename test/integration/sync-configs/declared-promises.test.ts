/**
 * Declared sync configs through the public surface only (the CLI as a child process, the daemon's
 * HTTP and metrics, the public tables), for what the other declared-config suites leave out:
 * servers named by display name or in another case, and a declaration equal to the service in
 * another order asking nothing of it; `users` and `all_users: true` replacing each other, with the
 * full snapshot owed until one succeeds; what `--prune` leaves alone; and a daemon that may not
 * adopt, serving the drift as a problem and a metric while it keeps running.
 */
import { describe, expect, it } from "vitest";
import { until } from "../../helpers/daemon.js";
import { DECLARED_SIM, remoteNamed, serverId, wiki, writeMirrors } from "../../helpers/declared-configs.js";
import { createHarness, type Harness, visibleKeys } from "../../helpers/mirror-harness.js";
import { answered } from "../../helpers/requests.js";
import { daemonSuite, NEVER } from "../daemon/setup.js";

const suite = daemonSuite();
const HTTP_TOKEN = "declared-promises-3c1f";

async function harness(): Promise<Harness> {
  return suite.use(
    await createHarness({ sim: DECLARED_SIM, defaults: { incremental_cron: NEVER, full_cron: NEVER } }),
  );
}

/** The upstream writes to sync configs since `h.sim.requests` was last cleared. */
function configWrites(h: Harness): number {
  return (
    answered(h, "POST /sync-configs") +
    answered(h, "PUT /sync-configs/{id}") +
    answered(h, "DELETE /sync-configs/{id}")
  );
}

async function syncJson(h: Harness): Promise<Record<string, unknown>> {
  const r = await h.cli(["sync", "--json"]);
  expect([0, 1], r.stderr).toContain(r.code);
  return JSON.parse(r.stdout).mirrors[0];
}

describe("declared sync configs: the documented promises", () => {
  it("resolves servers by display name in any case; the same declaration in another order asks nothing", async () => {
    const h = await harness();
    const [wikiServer, github] = [serverId(h.sim, "Team Wiki"), serverId(h.sim, "GitHub")];
    h.sim.renameServer(github, { display_name: "Engineering issues" });
    writeMirrors(h, { main: wiki({ servers: ["team wiki", "Engineering issues"] }) });
    expect((await h.cli(["plan"])).code).toBe(3);
    expect((await h.cli(["apply"])).code).toBe(0);
    expect(remoteNamed(h.sim, "Wiki").server_instance_ids).toEqual([wikiServer, github]);

    writeMirrors(h, {
      main: wiki({
        servers: ["ENGINEERING ISSUES", "Team Wiki"],
        users: ["User2@Example.com", "user1@example.com"],
      }),
    });
    const plan = await h.cli(["plan", "--json"]);
    expect(plan.code).toBe(0);
    expect(JSON.parse(plan.stdout)).toMatchObject({
      pending: false,
      problems: 0,
      mirrors: [{ mirror: "main", action: "none", changes: [], needs: null, problem: null }],
    });
    h.sim.requests.length = 0;
    const again = await h.cli(["apply"]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("is up to date");
    expect(configWrites(h)).toBe(0);
  });

  it("replaces all_users: true by a user list; the full snapshot owed stays owed until one succeeds", async () => {
    const h = await harness();
    writeMirrors(h, { main: wiki({ users: undefined, all_users: true }) });
    expect((await h.cli(["apply"])).code).toBe(0);
    const created = remoteNamed(h.sim, "Wiki");
    expect(created).toMatchObject({ all_users: true, user_emails: [] });
    expect(await syncJson(h)).toMatchObject({ mode: "full", outcome: "succeeded" });
    expect(await syncJson(h)).toMatchObject({ mode: "incremental", outcome: "succeeded" });
    const user1Keys = visibleKeys(h, "user1@example.com");
    expect(visibleKeys(h, "user3@example.com")).not.toEqual([]);

    writeMirrors(h, { main: wiki({ users: ["user1@example.com"] }) });
    const plan = await h.cli(["plan", "--json"]);
    expect(plan.code).toBe(3);
    expect(JSON.parse(plan.stdout).mirrors[0]).toMatchObject({
      action: "replace",
      sync_config_id: created.id,
      changes: [
        { field: "all_users", from: true, to: false },
        { field: "users", add: ["user1@example.com"], remove: [] },
      ],
    });
    expect((await h.cli(["apply"])).code).toBe(0);
    expect(remoteNamed(h.sim, "Wiki")).toMatchObject({
      id: created.id,
      all_users: false,
      user_emails: ["user1@example.com"],
    });

    // The full pass after the change does not succeed: the one after it is full again.
    h.sim.setOutcome({ user: "user1@example.com" }, { task: "FAILED", times: 1 });
    expect(await syncJson(h)).toMatchObject({ mode: "full", since: null, outcome: "partial" });
    expect(await syncJson(h)).toMatchObject({ mode: "full", since: null, outcome: "succeeded" });
    expect(visibleKeys(h, "user2@example.com")).toEqual([]);
    expect(visibleKeys(h, "user3@example.com")).toEqual([]);
    expect(visibleKeys(h, "user1@example.com")).toEqual(user1Keys);
    expect(await syncJson(h)).toMatchObject({ mode: "incremental", outcome: "succeeded" });
  });

  it("prunes only what syncmirror created and nobody mirrors: never a config it did not create, nor one a mirror names by id", async () => {
    const h = await harness();
    const foreign = h.sim.configs.create({ name: "Handbook", instructions: "Someone else's." });
    writeMirrors(h, { main: wiki(), extra: wiki({ name: "Extra" }), gone: wiki({ name: "Gone" }) });
    expect((await h.cli(["apply"])).code).toBe(0);
    const [mine, extra, gone] = ["Wiki", "Extra", "Gone"].map((n) => remoteNamed(h.sim, n).id);

    // main now names its config by id; extra is no longer in the file; gone is too, and someone
    // already deleted its config upstream.
    h.sim.configs.remove(gone as string);
    writeMirrors(h, { main: mine as string, other: h.sim.syncConfigId });
    const planned = async () => {
      const plan = await h.cli(["plan", "--json"]);
      expect(plan.code).toBe(0);
      return (
        JSON.parse(plan.stdout) as { mirrors: { mirror: string; action: string; needs: string | null }[] }
      ).mirrors.map(({ mirror, action, needs }) => ({ mirror, action, needs }));
    };
    expect(await planned()).toEqual(
      expect.arrayContaining([
        { mirror: "main", action: "forget", needs: null },
        { mirror: "extra", action: "unmanaged", needs: "prune" },
        { mirror: "gone", action: "forget", needs: null },
      ]),
    );
    h.sim.requests.length = 0;
    const pruned = await h.cli(["apply", "--prune"]);
    expect(pruned.code).toBe(0);
    expect(answered(h, "DELETE /sync-configs/{id}")).toBe(1);
    expect(() => h.sim.configs.get(extra as string)).toThrow(/404/);
    expect(h.sim.configs.get(mine as string).name).toBe("Wiki");
    expect(h.sim.configs.get(foreign).name).toBe("Handbook");
    expect(h.sim.configs.get(h.sim.syncConfigId).name).toBe("All servers, all users");
    // Nothing is tracked any more: the next plan has only the mirrors of the file, neither to do.
    expect(await planned()).toEqual([
      { mirror: "main", action: "not_declared", needs: null },
      { mirror: "other", action: "not_declared", needs: null },
    ]);
  });

  it("the daemon never adopts: a foreign config of the declared name is drift (problem and metric), untouched, and the daemon runs on", async () => {
    const h = await harness();
    const foreign = h.sim.configs.create({ name: "Wiki", instructions: "Someone else's." });
    writeMirrors(h, { main: wiki(), good: wiki({ name: "Good" }) }, { manage_sync_configs: true });
    const env = { SYNCMIRROR_HTTP_TOKEN: HTTP_TOKEN };
    const problems = async (port: number) => {
      const res = await fetch(`http://127.0.0.1:${port}/v1/problems`, {
        headers: { Authorization: `Bearer ${HTTP_TOKEN}` },
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { problems: { mirror: string; kind: string; reason: string }[] })
        .problems;
    };

    const d = await suite.daemon(h, { env });
    await until(() => d.logs().some((l) => l.msg === "daemon started"), "the daemon started");
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "main" })).toBe(1);
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "good" })).toBe(0);
    expect(await problems(d.port)).toEqual([
      expect.objectContaining({
        mirror: "main",
        kind: "config_error",
        reason: expect.stringContaining("`syncmirror apply --adopt` takes it over"),
      }),
    ]);
    expect(h.sim.configs.get(foreign).instructions).toBe("Someone else's.");
    expect(remoteNamed(h.sim, "Good").instructions).toBe("Collect the wiki.");
    // plan reads beside the running daemon (it takes no lock) and names the same decision.
    const plan = await h.cli(["plan"]);
    expect(plan.code).toBe(1);
    expect(plan.stdout).toContain(`adopt sync config "Wiki" (${foreign})`);
    expect(d.child.exitCode).toBeNull();
    expect((await d.stop()).code).toBe(0);

    // The person's decision, then a restart: nothing left to apply, no drift, no problem.
    expect((await h.cli(["apply", "--adopt"])).code).toBe(0);
    expect(h.sim.configs.get(foreign).instructions).toBe("Collect the wiki.");
    const restarted = await suite.daemon(h, { env });
    await until(() => restarted.logs().some((l) => l.msg === "daemon started"), "the daemon started again");
    expect(await restarted.metric("syncmirror_sync_config_drift", { mirror: "main" })).toBe(0);
    expect(await problems(restarted.port)).toEqual([]);
    expect((await restarted.stop()).code).toBe(0);
  });
});
