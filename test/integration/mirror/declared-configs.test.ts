/**
 * `plan` and `apply` through the real CLI against the simulator, on the suite's store (SQLite, or
 * PostgreSQL in vitest's `postgres` project): create from nothing, a no-op plan after apply, one
 * field replaced, a name taken by a config syncmirror did not create, a server name that resolves
 * to no server or to several, pruning, a create whose answer was lost, and the mirror sharing rule.
 */
import { describe, expect, it } from "vitest";
import { freePort } from "../../helpers/daemon.js";
import {
  declaredSuite,
  managedRow,
  remoteNamed,
  serverId,
  wiki,
  writeMirrors,
} from "../../helpers/declared-configs.js";
import type { Harness } from "../../helpers/mirror-harness.js";
import { editConfig } from "../daemon/setup.js";

const declaredHarness = declaredSuite();
let h: Harness;

describe("declared sync configs: plan and apply", () => {
  it("creates a config from nothing, then plans nothing to change (exit 0) and syncs through it", async () => {
    h = await declaredHarness();
    const before = await h.cli(["plan"]);
    expect(before.code).toBe(3);
    expect(before.stdout).toContain('mirror main: create sync config "Wiki" in project "Acme"');
    expect(before.stdout).toContain("+ servers: Team Wiki, GitHub");
    expect(before.stdout).toContain("+ users: user1@example.com, user2@example.com");
    expect(JSON.parse((await h.cli(["plan", "--json"])).stdout)).toMatchObject({
      pending: true,
      problems: 0,
      mirrors: [{ mirror: "main", action: "create", name: "Wiki", sync_config_id: null }],
    });

    const applied = await h.cli(["apply"]);
    expect(applied.code).toBe(0);
    const remote = remoteNamed(h.sim, "Wiki");
    expect(applied.stdout).toContain(`mirror main: created sync config "Wiki" (${remote.id})`);
    expect(remote).toMatchObject({
      instructions: "Collect the wiki.",
      all_users: false,
      user_emails: ["user1@example.com", "user2@example.com"],
      server_instance_ids: [serverId(h.sim, "Team Wiki"), serverId(h.sim, "GitHub")],
    });
    expect(managedRow(h)).toMatchObject({ sync_config_id: remote.id, origin: "created", last_error: null });

    const after = await h.cli(["plan"]);
    expect(after.code).toBe(0);
    expect(after.stdout).toContain(`mirror main: sync config "Wiki" (${remote.id}) is up to date`);
    const synced = await h.cli(["sync", "--json"]);
    expect(synced.code).toBe(0);
    expect(JSON.parse(synced.stdout).mirrors[0]).toMatchObject({ outcome: "succeeded", mode: "full" });
    const runs = h.sim.runs.list();
    expect(runs.map((r) => r.user_email).sort()).toEqual(["user1@example.com", "user2@example.com"]);
    expect(new Set(runs.map((r) => r.sync_config_id))).toEqual(new Set([remote.id]));
  });

  it("replaces one field: plan shows it (exit 3), apply replaces it, then plan is clean (exit 0)", async () => {
    h = await declaredHarness();
    expect((await h.cli(["apply"])).code).toBe(0);
    writeMirrors(h, { main: wiki({ instructions: "Collect the wiki and its issues." }) });
    const plan = await h.cli(["plan"]);
    expect(plan.code).toBe(3);
    expect(plan.stdout).toContain(
      '~ instructions: "Collect the wiki." -> "Collect the wiki and its issues."',
    );
    expect(plan.stdout).not.toContain("~ servers");
    const applied = await h.cli(["apply"]);
    expect(applied.code).toBe(0);
    expect(applied.stdout).toContain('replaced instructions of sync config "Wiki"');
    expect(remoteNamed(h.sim, "Wiki").instructions).toBe("Collect the wiki and its issues.");
    expect((await h.cli(["plan"])).code).toBe(0);
  });

  it("calls a rename to the name of another config of the project a problem (exit 1) before apply would be refused", async () => {
    h = await declaredHarness();
    expect((await h.cli(["apply"])).code).toBe(0);
    const mine = remoteNamed(h.sim, "Wiki").id;
    const taken = h.sim.configs.create({ name: "Handbook", instructions: "Someone else's." });
    writeMirrors(h, { main: wiki({ name: "Handbook" }) });
    const plan = await h.cli(["plan"]);
    expect(plan.code).toBe(1);
    expect(plan.stdout).toContain(`another sync config of the project (${taken}) is named "Handbook"`);
    expect(JSON.parse((await h.cli(["plan", "--json"])).stdout)).toMatchObject({ problems: 1 });
    const refused = await h.cli(["apply"]);
    expect(refused.code).toBe(1);
    expect(h.sim.configs.get(mine).name).toBe("Wiki");
    expect(h.sim.configs.get(taken).instructions).toBe("Someone else's.");
  });

  it("refuses a config of the declared name that syncmirror did not create, then takes it over with --adopt", async () => {
    h = await declaredHarness();
    const foreign = h.sim.configs.create({ name: "Wiki", instructions: "Someone else's." });
    const plan = await h.cli(["plan"]);
    expect(plan.code).toBe(1);
    expect(plan.stdout).toContain(
      `adopt sync config "Wiki" (${foreign}): it exists and syncmirror did not create it`,
    );
    // --json counts it as a problem and says which, as apply would.
    const json = JSON.parse((await h.cli(["plan", "--json"])).stdout) as {
      problems: number;
      mirrors: { needs: string | null; problem: string | null }[];
    };
    expect(json.problems).toBe(1);
    expect(json.mirrors[0]?.needs).toBe("adopt");
    expect(json.mirrors[0]?.problem).toContain("`syncmirror apply --adopt` takes it over");
    const refused = await h.cli(["apply"]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain("REFUSED");
    expect(refused.stdout).toContain("`syncmirror apply --adopt` takes it over");
    // Logged too, like a failed pass of `sync`: what watches stderr sees why the apply failed.
    expect(refused.stderr).toContain("`syncmirror apply --adopt` takes it over");
    expect(h.sim.configs.get(foreign).instructions).toBe("Someone else's.");
    expect(managedRow(h)).toMatchObject({
      sync_config_id: null,
      origin: null,
      last_error: expect.any(String),
    });

    const adopted = await h.cli(["apply", "--adopt"]);
    expect(adopted.code).toBe(0);
    expect(adopted.stdout).toContain(`adopted sync config "Wiki" (${foreign})`);
    expect(h.sim.configs.get(foreign).instructions).toBe("Collect the wiki.");
    expect(h.sim.configs.list().filter((c) => c.name === "Wiki")).toHaveLength(1);
    expect(managedRow(h)).toMatchObject({
      sync_config_id: foreign,
      origin: "adopted",
      adopted_at: expect.any(String),
      last_error: null,
    });
    expect((await h.cli(["plan"])).code).toBe(0);

    // Pruned, a config syncmirror adopted is released, never deleted: it did not create it.
    writeMirrors(h, { other: h.sim.syncConfigId });
    const released = await h.cli(["apply", "--prune"]);
    expect(released.code).toBe(0);
    expect(released.stdout).toContain('mirror main: released sync config "Wiki": left upstream');
    expect(h.sim.configs.get(foreign).name).toBe("Wiki");
    expect(managedRow(h)).toBeUndefined();
  });

  it("calls an unknown or ambiguous server name a config error (exit 2) naming the key and the candidates", async () => {
    h = await declaredHarness();
    writeMirrors(h, { main: wiki({ servers: ["Team Wiki", "Gogle Drive"] }) });
    for (const command of ["plan", "apply", "check"]) {
      const result = await h.cli([command]);
      expect(result.code).toBe(2);
      // check's first line says the file was read, never that the config is ok.
      expect(result.stdout).not.toMatch(/: ok\b/);
      expect(result.stderr).toContain(
        'mirrors[0].sync_config.servers[1]: no syncable server of project "Acme" is named "Gogle Drive"',
      );
      for (const name of ['"Team Wiki"', '"Google Drive"', '"GitHub"']) expect(result.stderr).toContain(name);
    }
    const github = serverId(h.sim, "GitHub");
    h.sim.renameServer(github, { display_name: "Team Wiki" });
    writeMirrors(h, { main: wiki({ servers: ["Team Wiki"] }) });
    const ambiguous = await h.cli(["plan"]);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain('mirrors[0].sync_config.servers[0]: "Team Wiki" names 2 servers');
    expect(ambiguous.stderr).toContain(github);
    expect(h.sim.configs.list()).toHaveLength(1);
    writeMirrors(h, { main: wiki({ servers: [github] }) });
    const byId = await h.cli(["plan"]);
    expect(byId.code).toBe(3);
    // A server the file names by id is shown by its name too.
    expect(byId.stdout).toContain(`+ servers: GitHub (${github})`);
  });

  it("plan --json with the API unreachable prints a document that says so, not empty output (exit 1)", async () => {
    h = await declaredHarness();
    const port = await freePort();
    editConfig(h, (config) => {
      config.api = {
        ...(config.api as object),
        base_url: `http://127.0.0.1:${port}/api/v1`,
        max_attempts: 1,
      };
    });
    const r = await h.cli(["plan", "--json"]);
    expect(r.code).toBe(1);
    const [line, ...more] = r.stderr.trim().split("\n");
    expect(more).toEqual([]);
    expect(line).toMatch(new RegExp(`^syncmirror: .*nothing answers at http://127\\.0\\.0\\.1:${port}`));
    // plan is a one-shot command: no next pass will try again for it.
    expect(line).toMatch(/; run the command again once the service answers$/);
    expect(line).not.toContain("next pass");
    expect(JSON.parse(r.stdout)).toEqual({
      pending: null,
      problems: null,
      error: { code: "API_UNAVAILABLE", message: line?.replace(/^syncmirror: /, "") },
      mirrors: [],
    });
    const text = await h.cli(["plan"]);
    expect(text.code).toBe(1);
    expect(text.stdout).toBe("");
  });

  it("keeps a config no mirror declares any more until --prune deletes it", async () => {
    h = await declaredHarness();
    writeMirrors(h, { main: wiki(), extra: wiki({ name: "Extra" }) });
    expect((await h.cli(["apply"])).code).toBe(0);
    const extra = remoteNamed(h.sim, "Extra");
    writeMirrors(h, { main: wiki() });
    const plan = await h.cli(["plan", "--json"]);
    expect(plan.code).toBe(0);
    expect(JSON.parse(plan.stdout).mirrors).toContainEqual(
      expect.objectContaining({
        mirror: "extra",
        action: "unmanaged",
        needs: "prune",
        sync_config_id: extra.id,
      }),
    );
    const kept = await h.cli(["apply"]);
    expect(kept.code).toBe(0);
    expect(kept.stdout).toContain("`apply --prune` deletes it");
    expect(h.sim.configs.get(extra.id).name).toBe("Extra");
    const pruned = await h.cli(["apply", "--prune"]);
    expect(pruned.code).toBe(0);
    expect(pruned.stdout).toContain('mirror extra: deleted sync config "Extra" upstream');
    expect(() => h.sim.configs.get(extra.id)).toThrow(/404/);
    expect(managedRow(h, "extra")).toBeUndefined();
    expect(remoteNamed(h.sim, "Wiki").name).toBe("Wiki");
    expect((await h.cli(["plan"])).stdout).not.toContain("extra");
  });

  it("recognises the config a create made when its answer was lost, and creates it once", async () => {
    h = await declaredHarness();
    h.sim.faults.inject("POST /sync-configs", { kind: "drop-after" });
    const applied = await h.cli(["apply"]);
    expect(applied.code).toBe(0);
    const remote = remoteNamed(h.sim, "Wiki");
    expect(applied.stdout).toContain(`created sync config "Wiki" (${remote.id})`);
    expect(h.sim.requests.filter((r) => r.method === "POST" && r.route === "/sync-configs")).toHaveLength(1);
    expect(managedRow(h)).toMatchObject({ sync_config_id: remote.id, origin: "created" });
  });

  it("fails the pass of a declared mirror never applied, naming what to run", async () => {
    h = await declaredHarness();
    const synced = await h.cli(["sync", "--json"]);
    expect(synced.code).toBe(1);
    expect(JSON.parse(synced.stdout).mirrors[0]).toMatchObject({
      outcome: "failed",
      // What `status` says its first pass will be: a sync config new upstream starts with a full.
      mode: "full",
      message: expect.stringContaining("has not been applied yet: run `syncmirror apply`"),
    });
    expect(h.sim.runs.list()).toHaveLength(0);

    // `trigger` with no daemon runs the pass itself: it says why nothing ran, not that another
    // process holds the mirror.
    const triggered = await h.cli(["trigger", "--mirror", "main", "--json"]);
    expect(triggered.code, triggered.stderr).toBe(0);
    const reply = JSON.parse(triggered.stdout) as { pass: unknown; message: string };
    expect(reply.pass).toBeNull();
    expect(reply.message).toContain("has not been applied yet: run `syncmirror apply`");
    expect(reply.message).not.toContain("another process");
    expect(h.sim.runs.list()).toHaveLength(0);
  });

  it("refuses to bind a declared mirror to a config another mirror names by id", async () => {
    h = await declaredHarness();
    writeMirrors(h, { main: h.sim.syncConfigId, copy: wiki({ name: "All servers, all users" }) });
    const applied = await h.cli(["apply", "--adopt"]);
    expect(applied.code).toBe(1);
    expect(applied.stdout).toContain(
      `sync config ${h.sim.syncConfigId} ("All servers, all users") is mirror main's too`,
    );
    expect(managedRow(h, "copy")?.sync_config_id ?? null).toBeNull();
  });
});
