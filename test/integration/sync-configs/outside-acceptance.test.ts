/**
 * Declared sync configs as a user outside the project meets them, through the CLI and the daemon
 * only: two mirrors declaring one name in one project however the project is written; what
 * `--prune` does with a config whose mirror was renamed, or which was created again in place of an
 * adopted one deleted upstream; the premium feature off (plan reads, apply and the daemon say what
 * to do, deleting still works); the keys of `plan --json`; a mirror moving from `sync_config_id`
 * to a declaration of the same config; a create refused for one mirror while the others are made.
 */
import { describe, expect, it } from "vitest";
import { until } from "../../helpers/daemon.js";
import { DECLARED_SIM, managedRow, remoteNamed, wiki, writeMirrors } from "../../helpers/declared-configs.js";
import { createHarness, type Harness, visibleKeys } from "../../helpers/mirror-harness.js";
import { answered } from "../../helpers/requests.js";
import { daemonSuite, NEVER } from "../daemon/setup.js";

const suite = daemonSuite();

async function harness(): Promise<Harness> {
  const h = suite.use(
    await createHarness({ sim: DECLARED_SIM, defaults: { incremental_cron: NEVER, full_cron: NEVER } }),
  );
  writeMirrors(h, { main: wiki() });
  return h;
}

/** A file that no longer declares the adopted "Wiki": the plan's note, then `apply --prune`'s line. */
async function adoptedThenPruned(h: Harness, rename: (foreign: string) => Promise<void>) {
  const foreign = h.sim.configs.create({ name: "Wiki", instructions: "Someone else's." });
  expect((await h.cli(["apply", "--adopt"])).code).toBe(0);
  await rename(foreign);
  writeMirrors(h, { other: h.sim.syncConfigId });
  const plan = await h.cli(["plan"]);
  const pruned = await h.cli(["apply", "--prune"]);
  expect(pruned.code).toBe(0);
  return { foreign, plan: plan.stdout, pruned: pruned.stdout };
}

describe("declared sync configs from outside", () => {
  it("refuses two mirrors declaring one name in one project, the project named in one and implied in the other (exit 2, nothing sent)", async () => {
    const h = await harness();
    for (const copy of [{ project: "Acme" }, { project: h.sim.projectId }]) {
      writeMirrors(h, { main: wiki(), copy: wiki(copy) });
      for (const command of ["plan", "apply"]) {
        const r = await h.cli([command]);
        expect(r.code, `${command}: ${r.stdout}`).toBe(2);
        expect(r.stdout).toBe("");
        expect(r.stderr).toContain(
          'mirrors[1].sync_config.name: mirrors "main" and "copy" both mirror the sync config named "Wiki"',
        );
      }
    }
    expect(answered(h, "POST /sync-configs")).toBe(0);
  });

  it("deletes with --prune a config it created again after the one it adopted was deleted upstream", async () => {
    const h = await harness();
    let created = "";
    const { plan, pruned } = await adoptedThenPruned(h, async (foreign) => {
      h.sim.configs.remove(foreign);
      const recreated = await h.cli(["apply"]);
      expect(recreated.code).toBe(0);
      created = remoteNamed(h.sim, "Wiki").id;
      expect(recreated.stdout).toContain(`created sync config "Wiki" (${created})`);
      expect(managedRow(h)).toMatchObject({ sync_config_id: created, origin: "created", adopted_at: null });
    });
    expect(plan).toContain("syncmirror created it and no mirror declares it any more");
    expect(pruned).toContain('mirror main: deleted sync config "Wiki" upstream');
    expect(() => h.sim.configs.get(created)).toThrow(/404/);
  });

  it("releases with --prune, never deletes, a config it adopted for a mirror since renamed in the file", async () => {
    const h = await harness();
    const { foreign, plan, pruned } = await adoptedThenPruned(h, async (adopted) => {
      writeMirrors(h, { renamed: wiki() });
      expect((await h.cli(["apply"])).code).toBe(0);
      expect(managedRow(h, "renamed")).toMatchObject({ sync_config_id: adopted, origin: "adopted" });
    });
    expect(plan).toContain("syncmirror adopted it and no mirror declares it any more");
    expect(pruned).toContain('mirror renamed: released sync config "Wiki": left upstream');
    expect(h.sim.configs.get(foreign).instructions).toBe("Collect the wiki.");
  });

  it("with the premium feature off, plan still reads (exit 3); apply refuses in one line saying what to do (exit 1) and still prunes", async () => {
    const h = await harness();
    writeMirrors(h, { main: wiki(), extra: wiki({ name: "Extra" }) });
    expect((await h.cli(["apply"])).code).toBe(0);
    const extra = remoteNamed(h.sim, "Extra").id;
    writeMirrors(h, {
      main: wiki({ instructions: "Collect the wiki and its issues." }),
      fresh: wiki({ name: "Fresh" }),
    });
    for (const status of [403, 409] as const) {
      h.sim.setPremium(false, { status });
      const plan = await h.cli(["plan", "--json"]);
      expect(plan.code).toBe(3);
      expect(JSON.parse(plan.stdout)).toMatchObject({ pending: true, problems: 0 });
      const refused = await h.cli(["apply"]);
      expect(refused.code).toBe(1);
      const lines = refused.stdout.split("\n").filter((l) => l.includes("REFUSED"));
      expect(lines.map((l) => l.split(":")[0])).toEqual(["mirror main", "mirror fresh"]);
      for (const line of lines)
        expect(line).toMatch(
          /Background Sync is turned off .*: turn on Background Sync under Administration > Premium Features$/,
        );
    }
    expect(remoteNamed(h.sim, "Wiki").instructions).toBe("Collect the wiki.");
    expect(h.sim.configs.list().map((c) => c.name)).not.toContain("Fresh");

    // Deleting still works while the feature is off: --prune does what it can, the rest waits.
    const pruned = await h.cli(["apply", "--prune"]);
    expect(pruned.code).toBe(1);
    expect(pruned.stdout).toContain('mirror extra: deleted sync config "Extra" upstream');
    expect(() => h.sim.configs.get(extra)).toThrow(/404/);

    h.sim.setPremium(true);
    expect((await h.cli(["apply"])).code).toBe(0);
    expect(remoteNamed(h.sim, "Fresh").name).toBe("Fresh");
    expect((await h.cli(["plan"])).code).toBe(0);
  });

  it("with the premium feature off, the daemon started after an edit runs on with drift and a problem; once on, it applies before the next pass, a full one", async () => {
    const h = await harness();
    expect((await h.cli(["apply"])).code).toBe(0);
    expect((await h.cli(["sync"])).code).toBe(0);
    expect((await h.cli(["sync"])).code).toBe(0);
    writeMirrors(h, { main: wiki({ users: ["user1@example.com"] }) }, { manage_sync_configs: true });
    h.sim.setPremium(false);

    const d = await suite.daemon(h);
    await until(() => d.logs().some((l) => l.msg === "daemon started"), "the daemon started");
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "main" })).toBe(1);
    expect(await d.metric("syncmirror_sync_config_apply_errors_total", { mirror: "main" })).toBe(1);
    const problems = await h.cli(["problems", "--json"]);
    expect(JSON.parse(problems.stdout).problems).toEqual([
      expect.objectContaining({
        mirror: "main",
        kind: "config_error",
        reason: expect.stringContaining("turn on Background Sync under Administration > Premium Features"),
      }),
    ]);
    expect(remoteNamed(h.sim, "Wiki").user_emails).toEqual(["user1@example.com", "user2@example.com"]);

    h.sim.setPremium(true);
    const done = () =>
      h.query<{ mode: string; since: string | null; outcome: string }>(
        "SELECT mode, since, outcome FROM triggers WHERE state = 'done' ORDER BY id",
      );
    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(() => done().length === 3, "the pass after the premium feature is back");
    expect(done()[2]).toEqual({ mode: "full", since: null, outcome: "succeeded" });
    expect(remoteNamed(h.sim, "Wiki").user_emails).toEqual(["user1@example.com"]);
    expect(visibleKeys(h, "user2@example.com")).toEqual([]);
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "main" })).toBe(0);
    expect(d.child.exitCode).toBeNull();
    expect((await d.stop()).code).toBe(0);
  });

  it("plan --json gives every mirror the same keys whatever its action", async () => {
    const h = await harness();
    writeMirrors(h, { main: wiki(), gone: wiki({ name: "Gone" }) });
    expect((await h.cli(["apply"])).code).toBe(0);
    h.sim.configs.create({ name: "Foreign", instructions: "Someone else's." });
    writeMirrors(h, {
      main: wiki({ instructions: "Collect the wiki and its issues." }),
      fresh: wiki({ name: "Fresh" }),
      foreign: wiki({ name: "Foreign" }),
      byid: h.sim.syncConfigId,
    });
    const plan = await h.cli(["plan", "--json"]);
    expect(plan.code).toBe(1);
    const json = JSON.parse(plan.stdout) as { mirrors: Record<string, unknown>[] };
    expect(Object.keys(json).sort()).toEqual(["mirrors", "pending", "problems"]);
    expect(json).toMatchObject({ pending: true, problems: 1 });
    expect(json.mirrors.map((m) => [m.mirror, m.action, m.needs])).toEqual([
      ["main", "replace", null],
      ["fresh", "create", null],
      ["foreign", "adopt", "adopt"],
      ["byid", "not_declared", null],
      ["gone", "unmanaged", "prune"],
    ]);
    for (const m of json.mirrors)
      expect(Object.keys(m).sort()).toEqual([
        "action",
        "changes",
        "mirror",
        "name",
        "needs",
        "notes",
        "problem",
        "sync_config_id",
      ]);
    const changes = json.mirrors.flatMap((m) => m.changes as Record<string, unknown>[]);
    for (const c of changes)
      expect(Object.keys(c).sort()).toEqual(
        "add" in c ? ["add", "field", "remove"] : ["field", "from", "to"],
      );
  });

  it("takes a mirror from sync_config_id to a declaration of the same config only with --adopt, and its next pass is a full snapshot", async () => {
    const h = await harness();
    writeMirrors(h, { main: h.sim.syncConfigId });
    expect((await h.cli(["sync"])).code).toBe(0);
    expect((await h.cli(["sync"])).code).toBe(0);
    writeMirrors(h, { main: wiki({ name: "All servers, all users" }) });
    expect((await h.cli(["plan"])).code).toBe(1);
    expect((await h.cli(["apply"])).code).toBe(1);
    expect(h.sim.configs.get(h.sim.syncConfigId).all_users).toBe(true);
    expect((await h.cli(["sync", "--json"])).code).toBe(1);

    expect((await h.cli(["apply", "--adopt"])).code).toBe(0);
    const synced = await h.cli(["sync", "--json"]);
    expect(synced.code).toBe(0);
    expect(JSON.parse(synced.stdout).mirrors[0]).toMatchObject({
      mode: "full",
      since: null,
      outcome: "succeeded",
    });
    expect(visibleKeys(h, "user3@example.com")).toEqual([]);
  });

  it("names the user the service refuses at create by key; nothing is created for that mirror, the others are (exit 1)", async () => {
    const h = await harness();
    writeMirrors(h, {
      main: wiki({ users: ["user1@example.com", "nobody@example.com"] }),
      other: wiki({ name: "Other" }),
    });
    const applied = await h.cli(["apply"]);
    expect(applied.code).toBe(1);
    expect(applied.stdout).toContain(
      "mirror main: REFUSED mirrors[0].sync_config.users[1] (nobody@example.com): the service refused it (400",
    );
    expect(applied.stdout).toContain('mirror other: created sync config "Other"');
    expect(h.sim.configs.list().map((c) => c.name)).not.toContain("Wiki");
  });
});
