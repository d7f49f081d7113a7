/**
 * Declared sync configs and the passes that use them, through the real CLI on the suite's store:
 * the service refusing a user who left the project (named by key), servers removed and their keys
 * swept by the next pass (a full snapshot whatever scheduled it), a pass in flight that an apply
 * must not change under it (not even its name), and drift between the file and the service that `check` reports.
 */
import { describe, expect, it } from "vitest";
import { type CliProcess, spawnCli, until } from "../../helpers/daemon.js";
import {
  declaredSuite,
  managedRow,
  remoteNamed,
  serverId,
  wiki,
  writeMirrors,
} from "../../helpers/declared-configs.js";
import { onPostgres } from "../../helpers/dialect.js";
import type { Harness } from "../../helpers/mirror-harness.js";
import { createTestApi } from "../../helpers/simulator.js";

const declaredHarness = declaredSuite();
let h: Harness;

/** Access rows of `main` on one server. */
function accessOn(server: string): number {
  return (
    h.query<{ n: number }>(
      "SELECT count(*) AS n FROM resource_access WHERE mirror = 'main' AND server_instance_id = ?",
      server,
    )[0]?.n ?? -1
  );
}

async function statusOfMain(): Promise<Record<string, unknown>> {
  const status = await h.cli(["status", "--json"]);
  expect(status.code).toBe(0);
  return JSON.parse(status.stdout).mirrors[0];
}

describe("declared sync configs: passes", () => {
  it("names the user the service refuses (left the project) by key; the old config stays in use", async () => {
    h = await declaredHarness();
    expect((await h.cli(["apply"])).code).toBe(0);
    h.sim.people.leaveProject("user2@example.com");
    writeMirrors(h, { main: wiki({ instructions: "Collect the wiki and its issues." }) });
    const refused = await h.cli(["apply"]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain(
      "REFUSED mirrors[0].sync_config.users[1] (user2@example.com): the service refused it (400: not users of this project: user2@example.com)",
    );
    expect(remoteNamed(h.sim, "Wiki").instructions).toBe("Collect the wiki.");
    expect(managedRow(h)?.last_error).toContain("mirrors[0].sync_config.users[1]");
    expect(await statusOfMain()).toMatchObject({
      declared_sync_config: { name: "Wiki", last_error: expect.stringContaining("user2@example.com") },
    });
    writeMirrors(h, {
      main: wiki({ instructions: "Collect the wiki and its issues.", users: ["user1@example.com"] }),
    });
    expect((await h.cli(["apply"])).code).toBe(0);
    expect(managedRow(h)?.last_error).toBeNull();
  });

  it("sweeps the keys of servers removed from the declaration at the next pass, a full one", async () => {
    h = await declaredHarness();
    writeMirrors(h, { main: wiki({ users: undefined, all_users: true }) });
    expect((await h.cli(["apply"])).code).toBe(0);
    expect((await h.cli(["sync"])).code).toBe(0);
    const [wikiServer, github] = [serverId(h.sim, "Team Wiki"), serverId(h.sim, "GitHub")];
    const wikiRows = accessOn(wikiServer);
    expect(accessOn(github)).toBeGreaterThan(0);
    expect(wikiRows).toBeGreaterThan(0);
    expect(await statusOfMain()).toMatchObject({ next_mode: "incremental" });

    writeMirrors(h, { main: wiki({ users: undefined, all_users: true, servers: ["Team Wiki"] }) });
    const applied = await h.cli(["apply"]);
    expect(applied.code).toBe(0);
    expect(applied.stdout).toContain("replaced servers of sync config");
    expect(applied.stdout).toContain("the next pass is a full snapshot");
    expect(await statusOfMain()).toMatchObject({ next_mode: "full", next_since: null });
    const synced = await h.cli(["sync", "--json"]);
    expect(synced.code).toBe(0);
    expect(JSON.parse(synced.stdout).mirrors[0]).toMatchObject({ mode: "full", outcome: "succeeded" });
    expect(accessOn(github)).toBe(0);
    expect(accessOn(wikiServer)).toBe(wikiRows);
    expect(managedRow(h)?.full_pending_after).toBeNull();
    expect(await statusOfMain()).toMatchObject({ next_mode: "incremental" });
  });

  it("refuses to change what a pass in flight collects; the pass keeps its settings, then the change applies", async () => {
    h = await declaredHarness();
    expect((await h.cli(["apply"])).code).toBe(0);
    const crashed = await h.cli(["sync"], { SYNCMIRROR_CRASH_AT: "after-trigger-post:1" });
    expect(crashed.code).toBeNull();
    const inFlight = h.sim.runs.list();
    expect(inFlight.length).toBeGreaterThan(0);

    writeMirrors(h, { main: wiki({ servers: ["Team Wiki"], instructions: "Only the wiki." }) });
    const plan = await h.cli(["plan"]);
    expect(plan.code).toBe(3);
    expect(plan.stdout).toContain("a full pass is in flight: apply refuses until it ends");
    const refused = await h.cli(["apply"]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain("mirror main has a full pass in flight");
    expect(refused.stdout).toContain("its runs keep their settings");
    // Left by a process that crashed: with no daemon, nothing ends it unless the operator does.
    expect(refused.stdout).toContain("`syncmirror sync --mirror main` finishes it when no daemon runs");
    expect(remoteNamed(h.sim, "Wiki").instructions).toBe("Collect the wiki.");

    const resumed = await h.cli(["sync", "--json"]);
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout).mirrors[0]).toMatchObject({ resumed: true, outcome: "succeeded" });
    const github = serverId(h.sim, "GitHub");
    for (const run of h.sim.runs.list())
      expect(run.sources.map((s) => s.server_instance_id)).toContain(github);
    expect(accessOn(github)).toBeGreaterThan(0);

    expect((await h.cli(["apply"])).code).toBe(0);
    expect(remoteNamed(h.sim, "Wiki").instructions).toBe("Only the wiki.");
    const next = await h.cli(["sync", "--json"]);
    expect(JSON.parse(next.stdout).mirrors[0]).toMatchObject({ mode: "full", outcome: "succeeded" });
    expect(accessOn(github)).toBe(0);
  });

  // Another process running the mirror's pass holds its lease: only PostgreSQL lets `apply` open
  // the database beside it (a SQLite mirror is one process's).
  it.runIf(onPostgres)(
    "beside another process's pass: an apply with nothing to change is up to date (exit 0), a change is refused (exit 1)",
    async () => {
      h = await declaredHarness();
      expect((await h.cli(["apply"])).code).toBe(0);
      // The pass waits on a run list that answers late, holding the mirror's lease meanwhile.
      h.sim.faults.inject("GET /sync-task", { kind: "delay", ms: 60_000, times: Number.POSITIVE_INFINITY });
      const pass: CliProcess = spawnCli(["sync", "--config", h.configPath], h.env);
      try {
        await until(
          () => h.query("SELECT 1 FROM leases WHERE mirror = 'main' AND released_at IS NULL").length === 1,
          "the pass holding the mirror's lease",
        );
        const same = await h.cli(["apply"]);
        expect(same.code, same.stdout).toBe(0);
        expect(same.stdout).toMatch(/sync config "Wiki" \(.*\) is up to date/);

        writeMirrors(h, { main: wiki({ instructions: "Only the wiki." }) });
        const changed = await h.cli(["apply"]);
        expect(changed.code).toBe(1);
        expect(changed.stdout).toContain("is running this mirror's pass: nothing was changed");
        expect(remoteNamed(h.sim, "Wiki").instructions).toBe("Collect the wiki.");
      } finally {
        await pass.stop("SIGTERM");
        h.sim.faults.clear();
      }
    },
  );

  it("refuses a rename alone under a pass in flight too, and makes the next pass a full one", async () => {
    h = await declaredHarness();
    expect((await h.cli(["apply"])).code).toBe(0);
    const { id } = remoteNamed(h.sim, "Wiki");
    const nameUpstream = () => h.sim.configs.list().find((c) => c.id === id)?.name;
    expect((await h.cli(["sync"])).code).toBe(0);
    const crashed = await h.cli(["sync"], { SYNCMIRROR_CRASH_AT: "after-trigger-post:1" });
    expect(crashed.code).toBeNull();

    writeMirrors(h, { main: wiki({ name: "Wiki renamed" }) });
    const plan = await h.cli(["plan"]);
    expect(plan.code).toBe(3);
    expect(plan.stdout).toContain('~ name: "Wiki" -> "Wiki renamed"');
    expect(plan.stdout).toContain("an incremental pass is in flight: apply refuses until it ends");
    const refused = await h.cli(["apply"]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain("mirror main has an incremental pass in flight (trigger");
    expect(nameUpstream()).toBe("Wiki");

    const resumed = await h.cli(["sync", "--json"]);
    expect(JSON.parse(resumed.stdout).mirrors[0]).toMatchObject({ resumed: true, mode: "incremental" });
    const applied = await h.cli(["apply"]);
    expect(applied.code).toBe(0);
    expect(applied.stdout).toContain('replaced name of sync config "Wiki renamed"');
    expect(applied.stdout).toContain("the next pass is a full snapshot");
    expect(nameUpstream()).toBe("Wiki renamed");
    expect(await statusOfMain()).toMatchObject({ next_mode: "full", next_since: null });
    const next = await h.cli(["sync", "--json"]);
    expect(JSON.parse(next.stdout).mirrors[0]).toMatchObject({ mode: "full", outcome: "succeeded" });
  });

  it("reports drift between the file and the service in check (exit 1) and plan (exit 3)", async () => {
    h = await declaredHarness();
    expect((await h.cli(["apply"])).code).toBe(0);
    const clean = await h.cli(["check"]);
    expect(clean.code).toBe(0);
    expect(clean.stdout).toContain('(declared as "Wiki")');
    const remote = remoteNamed(h.sim, "Wiki");
    const edited = await createTestApi(h.sim).put(`/sync-configs/${remote.id}`, {
      name: "Wiki",
      instructions: "Edited in the service's UI.",
      server_instance_ids: remote.server_instance_ids,
      all_users: true,
      user_emails: [],
    });
    expect(edited.status).toBe(200);
    const checked = await h.cli(["check"]);
    expect(checked.code).toBe(1);
    expect(checked.stdout).toContain(
      "PROBLEM drift: the service's sync config differs from the file in instructions, all_users, users",
    );
    const plan = await h.cli(["plan"]);
    expect(plan.code).toBe(3);
    expect(plan.stdout).toContain("~ all_users: true -> false");
    expect(plan.stdout).toContain("~ users: + user1@example.com, + user2@example.com");
  });
});
