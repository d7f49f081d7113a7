/**
 * `manage_sync_configs: true`: the daemon applies declared sync configs at start-up and before a
 * pass whose declaration is not applied or whose config the service no longer holds as declared
 * (edited or deleted upstream); what it cannot apply is logged, counted, recorded and
 * shown as drift, and never stops another mirror. A change, a rename too, waits for the pass left in
 * flight, and the pass after it is full. Before a pass the declaration is the one the file holds
 * then: an edit is applied (or kept, when `apply` ran beside the daemon), never undone; a file that
 * no longer loads, or no longer declares the mirror, changes nothing upstream and is a problem.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { type DaemonProcess, until } from "../../helpers/daemon.js";
import { DECLARED_SIM, managedRow, remoteNamed, wiki, writeMirrors } from "../../helpers/declared-configs.js";
import { onPostgres } from "../../helpers/dialect.js";
import { createHarness, type Harness, visibleKeys } from "../../helpers/mirror-harness.js";
import { answered, triggerPosts } from "../../helpers/requests.js";
import { replaceSyncConfig } from "../../helpers/simulator.js";
import { daemonSuite, EVERY_SECOND, NEVER, setCrons } from "./setup.js";

const suite = daemonSuite();
const PUT = "PUT /sync-configs/{id}";
const HTTP_TOKEN = "controls-bearer-7d2e";

/** The passes that ended, oldest first. */
function passes(h: Harness): { mode: string; outcome: string }[] {
  return h.query("SELECT mode, outcome FROM triggers WHERE state = 'done' ORDER BY id");
}

/** A daemon past its start-up apply (its schedules started). */
async function started(h: Harness, env?: Record<string, string>): Promise<DaemonProcess> {
  const d = await suite.daemon(h, env ? { env } : {});
  await until(() => d.logs().some((l) => l.msg === "daemon started"), "the daemon started");
  return d;
}

/** A daemon managing the declared mirror `main`, past its first pass (asked for, no schedule). */
async function afterFirstPass(options: { maxAttempts?: number } = {}) {
  const h = suite.use(
    await createHarness({
      sim: DECLARED_SIM,
      ...options,
      defaults: { incremental_cron: NEVER, full_cron: NEVER },
    }),
  );
  writeMirrors(h, { main: wiki() }, { manage_sync_configs: true });
  const d = await started(h);
  expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
  await until(() => passes(h).length === 1, "the first pass");
  return { h, d };
}

describe("syncmirror run with manage_sync_configs: true", () => {
  it("applies at start-up; a config it cannot apply is drift (logged, counted, recorded), the other mirror syncs", async () => {
    const h = suite.use(
      await createHarness({
        sim: DECLARED_SIM,
        defaults: { incremental_cron: EVERY_SECOND, full_cron: NEVER },
      }),
    );
    h.sim.people.leaveProject("user3@example.com");
    writeMirrors(
      h,
      {
        good: wiki({ name: "Good" }),
        bad: wiki({ name: "Bad", users: ["user1@example.com", "user3@example.com"] }),
      },
      { manage_sync_configs: true },
    );
    const d = await suite.daemon(h);
    const succeeded = (mirror: string) =>
      d.metric("syncmirror_triggers_total", { mirror, outcome: "succeeded" });
    await until(async () => (await succeeded("good")) >= 1, "a succeeded pass of the good mirror");
    expect(remoteNamed(h.sim, "Good").user_emails).toEqual(["user1@example.com", "user2@example.com"]);
    expect(h.sim.configs.list().map((c) => c.name)).not.toContain("Bad");
    const messages = d.logs().map((l) => String(l.msg));
    const created = messages.findIndex((m) => m.startsWith('created sync config "Good"'));
    expect(created).toBeGreaterThanOrEqual(0);
    expect(created).toBeLessThan(messages.indexOf("daemon started"));
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "good" })).toBe(0);
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "bad" })).toBe(1);
    expect(managedRow(h, "good")).toMatchObject({ origin: "created", last_error: null });
    expect(managedRow(h, "bad")?.last_error).toContain("mirrors[1].sync_config.users[1] (user3@example.com)");
    const drift = d
      .logs()
      .find((l) => l.mirror === "bad" && l.msg === "the declared sync config could not be applied");
    expect(String(drift?.err)).toContain("not users of this project: user3@example.com");

    // Each later pass of the bad mirror tries again, and is skipped while nothing is applied.
    await until(
      async () => (await d.metric("syncmirror_sync_config_apply_errors_total", { mirror: "bad" })) >= 2,
      "another attempt before a later pass",
    );
    expect(await succeeded("bad")).toBe(0);
    expect(
      d.logs().some((l) => l.mirror === "bad" && l.msg === "pass skipped: no sync config to trigger"),
    ).toBe(true);

    h.sim.people.joinProject("user3@example.com");
    await until(async () => (await succeeded("bad")) >= 1, "the bad mirror's pass once the user is back");
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "bad" })).toBe(0);
    expect(managedRow(h, "bad")).toMatchObject({ origin: "created", last_error: null });
    expect((await d.stop()).code).toBe(0);
  });

  it("serves the drift recorded by the daemon before from the first scrape, while its start-up apply runs", async () => {
    const h = suite.use(
      await createHarness({ sim: DECLARED_SIM, defaults: { incremental_cron: NEVER, full_cron: NEVER } }),
    );
    h.sim.people.leaveProject("user3@example.com");
    writeMirrors(
      h,
      { bad: wiki({ name: "Bad", users: ["user1@example.com", "user3@example.com"] }) },
      { manage_sync_configs: true },
    );
    const first = await started(h);
    expect(await first.metric("syncmirror_sync_config_drift", { mirror: "bad" })).toBe(1);
    expect((await first.stop()).code).toBe(0);

    // The service answers slowly: the start-up apply is still running at the first scrape.
    h.sim.faults.inject("*", { kind: "delay", ms: 3000 });
    const second = await suite.daemon(h);
    expect(await second.metric("syncmirror_sync_config_drift", { mirror: "bad" })).toBe(1);
    expect(second.logs().some((l) => l.msg === "daemon started")).toBe(false);
    // Ready is alive on the database already: `trigger` leaves a pass asked for now to this daemon.
    expect(h.query("SELECT name FROM replicas"), "the heartbeat of the daemon now ready").toHaveLength(1);
    expect((await second.stop()).code).toBe(0);
  });

  it("applies a rename only once the pass left in flight ends, and makes the next pass a full one", async () => {
    const h = suite.use(
      await createHarness({
        sim: DECLARED_SIM,
        defaults: { incremental_cron: EVERY_SECOND, full_cron: NEVER },
      }),
    );
    writeMirrors(h, { main: wiki() });
    expect((await h.cli(["apply"])).code).toBe(0);
    const { id } = remoteNamed(h.sim, "Wiki");
    expect((await h.cli(["sync"])).code).toBe(0);
    expect((await h.cli(["sync"], { SYNCMIRROR_CRASH_AT: "after-trigger-post:1" })).code).toBeNull();
    writeMirrors(h, { main: wiki({ name: "Wiki renamed" }) }, { manage_sync_configs: true });

    const d = await suite.daemon(h);
    const passes = (mode: string) =>
      d.metric("syncmirror_triggers_total", { mirror: "main", mode, outcome: "succeeded" });
    await until(async () => (await passes("full")) >= 1, "a full pass after the rename");
    const messages = d.logs().map((l) => String(l.msg));
    const deferred = messages.indexOf("the declared sync config is applied once the pass in flight ends");
    const renamed = messages.findIndex((m) => m.startsWith('replaced name of sync config "Wiki renamed"'));
    expect(deferred).toBeGreaterThanOrEqual(0);
    expect(renamed).toBeGreaterThan(deferred);
    expect(messages[renamed]).toContain("the next pass is a full snapshot");
    expect(await passes("incremental")).toBeGreaterThanOrEqual(1);
    expect(h.sim.configs.list().find((c) => c.id === id)?.name).toBe("Wiki renamed");
    expect((await d.stop()).code).toBe(0);
  });

  it("puts back an upstream edit its start-up found under a pass left in flight, once that pass ends and before the next trigger", async () => {
    const h = suite.use(
      await createHarness({ sim: DECLARED_SIM, defaults: { incremental_cron: NEVER, full_cron: NEVER } }),
    );
    writeMirrors(h, { main: wiki() }, { manage_sync_configs: true });
    expect((await h.cli(["apply"])).code).toBe(0);
    expect((await h.cli(["sync"])).code).toBe(0);
    expect((await h.cli(["sync"], { SYNCMIRROR_CRASH_AT: "after-trigger-post:1" })).code).toBeNull();
    // Someone widens the config in the service's UI while no daemon runs; the file is unchanged.
    const { id } = remoteNamed(h.sim, "Wiki");
    await replaceSyncConfig(h.sim, id, {
      user_emails: ["user1@example.com", "user2@example.com", "user3@example.com"],
    });
    h.sim.requests.length = 0;

    const d = await started(h);
    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(() => passes(h).length === 3, "the pass left in flight, then the pass asked for");
    const routes = h.sim.requests.map((r) => `${r.method} ${r.route}`);
    expect(routes.indexOf(PUT), "the edit put back before the next trigger").toBeGreaterThanOrEqual(0);
    expect(routes.indexOf(PUT)).toBeLessThan(routes.indexOf("POST /sync-task"));
    expect(remoteNamed(h.sim, "Wiki").user_emails).toEqual(["user1@example.com", "user2@example.com"]);
    expect(passes(h)[2]).toEqual({ mode: "full", outcome: "succeeded" });
    expect(visibleKeys(h, "user3@example.com")).toEqual([]);
    expect((await d.stop()).code).toBe(0);
  });

  it("applies a change before the full pass due after the trigger it resumes, not after that full", async () => {
    const h = suite.use(
      await createHarness({
        sim: DECLARED_SIM,
        defaults: { incremental_cron: NEVER, full_cron: NEVER },
      }),
    );
    writeMirrors(h, { main: wiki() });
    expect((await h.cli(["apply"])).code).toBe(0);
    expect((await h.cli(["sync"])).code).toBe(0);
    expect((await h.cli(["sync"], { SYNCMIRROR_CRASH_AT: "after-trigger-post:1" })).code).toBeNull();
    writeMirrors(h, { main: wiki({ servers: ["Team Wiki"] }) }, { manage_sync_configs: true });
    // A full falls due at once: the start-up catch-up of an every-second full_cron.
    setCrons(h, { incremental_cron: NEVER, full_cron: EVERY_SECOND });
    h.sim.requests.length = 0;

    const d = await suite.daemon(h);
    await until(() => answered(h, PUT) === 1 && triggerPosts(h) >= 1, "the change and a new trigger");
    const routes = h.sim.requests.map((r) => `${r.method} ${r.route}`);
    expect(routes.indexOf(PUT), "the change is applied before the next trigger").toBeLessThan(
      routes.indexOf("POST /sync-task"),
    );
    expect((await d.stop()).code).toBe(0);
  });

  it("puts back an upstream edit made while it runs before the next pass, which is full", async () => {
    const { h, d } = await afterFirstPass();
    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(() => passes(h).length === 2, "a pass with the file and the service agreeing");
    // Someone widens the config in the service's UI under the running daemon; the file is unchanged.
    const { id } = remoteNamed(h.sim, "Wiki");
    await replaceSyncConfig(h.sim, id, {
      user_emails: ["user1@example.com", "user2@example.com", "user3@example.com"],
    });
    h.sim.requests.length = 0;

    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(() => passes(h).length === 3, "the pass after the edit");
    const routes = h.sim.requests.map((r) => `${r.method} ${r.route}`);
    expect(routes.indexOf(PUT), "the edit put back before the next trigger").toBeGreaterThanOrEqual(0);
    expect(routes.indexOf(PUT)).toBeLessThan(routes.indexOf("POST /sync-task"));
    expect(remoteNamed(h.sim, "Wiki").user_emails).toEqual(["user1@example.com", "user2@example.com"]);
    expect(passes(h).map((p) => p.mode)).toEqual(["full", "incremental", "full"]);
    expect(passes(h)[2]?.outcome).toBe("succeeded");
    expect(visibleKeys(h, "user3@example.com")).toEqual([]);
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "main" })).toBe(0);
    expect((await d.stop()).code).toBe(0);
  });

  it("takes a service that does not answer its look before a pass as no drift: the pass goes on", async () => {
    const { h, d } = await afterFirstPass({ maxAttempts: 1 });
    h.sim.faults.inject("GET /sync-configs/{id}", { kind: "500", times: Number.POSITIVE_INFINITY });

    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(() => passes(h).length === 2, "the pass after the failed look");
    expect(passes(h)[1]).toEqual({ mode: "incremental", outcome: "succeeded" });
    expect(
      d.logs().some((l) => l.msg === "could not compare the declared sync config with the service's"),
    ).toBe(true);
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "main" })).toBe(0);
    expect(await d.metric("syncmirror_sync_config_apply_errors_total", { mirror: "main" })).toBe(0);
    expect(managedRow(h)?.last_error).toBeNull();
    expect((await d.stop()).code).toBe(0);
  });

  it("creates the config again before the next pass once it was deleted upstream", async () => {
    const { h, d } = await afterFirstPass();
    const gone = remoteNamed(h.sim, "Wiki").id;
    h.sim.configs.remove(gone);

    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(() => passes(h).length === 2, "the pass after the delete");
    const again = remoteNamed(h.sim, "Wiki");
    expect(again.id).not.toBe(gone);
    expect(passes(h)[1]).toEqual({ mode: "full", outcome: "succeeded" });
    expect(managedRow(h)).toMatchObject({ sync_config_id: again.id, last_error: null });
    expect((await d.stop()).code).toBe(0);
  });

  it("applies the declaration the file holds before a pass: an edit is kept (apply beside it on PostgreSQL), the pass is full, the dropped user loses access", async () => {
    const h = suite.use(
      await createHarness({ sim: DECLARED_SIM, defaults: { incremental_cron: NEVER, full_cron: NEVER } }),
    );
    writeMirrors(h, { main: wiki() }, { manage_sync_configs: true });
    // PostgreSQL: two replicas sharing the file, and `apply` beside them; SQLite: one daemon, which
    // holds the file's writer lock, so the edit alone.
    const daemons = [await started(h), ...(onPostgres ? [await started(h)] : [])];
    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(() => passes(h).length === 1, "the first pass");
    const user1Keys = visibleKeys(h, "user1@example.com");
    expect(visibleKeys(h, "user2@example.com")).not.toEqual([]);
    expect(answered(h, PUT)).toBe(0);

    writeMirrors(h, { main: wiki({ users: ["user1@example.com"] }) }, { manage_sync_configs: true });
    if (onPostgres) {
      const applied = await h.cli(["apply"]);
      expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    }
    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(() => passes(h).length === 2, "the pass after the edit");

    expect(remoteNamed(h.sim, "Wiki").user_emails).toEqual(["user1@example.com"]);
    expect(answered(h, PUT), "one replace, never the start-up declaration put back").toBe(1);
    expect(passes(h)[1]).toEqual({ mode: "full", outcome: "succeeded" });
    expect(visibleKeys(h, "user2@example.com")).toEqual([]);
    expect(visibleKeys(h, "user1@example.com")).toEqual(user1Keys);
    expect(managedRow(h)).toMatchObject({ last_error: null, full_pending_after: null });
    for (const d of daemons) expect((await d.stop()).code).toBe(0);
  });

  it("changes nothing upstream when the file no longer loads, no longer declares the mirror, or turned manage_sync_configs off; the passes go on", async () => {
    const h = suite.use(
      await createHarness({ sim: DECLARED_SIM, defaults: { incremental_cron: NEVER, full_cron: NEVER } }),
    );
    writeMirrors(h, { main: wiki() }, { manage_sync_configs: true });
    const good = readFileSync(h.configPath, "utf8");
    const d = await started(h, { SYNCMIRROR_HTTP_TOKEN: HTTP_TOKEN });
    const before = remoteNamed(h.sim, "Wiki");
    // Over HTTP: the CLI would read the file too.
    const triggerPass = async (n: number) => {
      const res = await fetch(`http://127.0.0.1:${d.port}/v1/mirrors/main/trigger`, {
        method: "POST",
        headers: { Authorization: `Bearer ${HTTP_TOKEN}` },
      });
      expect(res.status).toBe(200);
      await until(() => passes(h).length === n, `pass ${n}`);
    };
    const configErrors = () => d.metric("syncmirror_problems", { mirror: "main", kind: "config_error" });

    writeFileSync(h.configPath, `${good}\nmirrors: [\n`);
    await triggerPass(1);
    expect(managedRow(h)?.last_error).toMatch(
      /syncmirror\.yaml no longer loads \(\(root\): YAML: .*\): nothing was changed upstream .*fix the file/,
    );
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "main" })).toBe(1);
    await until(async () => (await configErrors()) === 1, "the config_error problem");

    writeFileSync(h.configPath, good);
    writeMirrors(h, { main: h.sim.syncConfigId }, { manage_sync_configs: true });
    await triggerPass(2);
    expect(managedRow(h)?.last_error).toContain("no longer declares a sync config for mirror main");
    expect(await d.metric("syncmirror_sync_config_apply_errors_total", { mirror: "main" })).toBe(2);

    writeFileSync(h.configPath, good);
    await triggerPass(3);
    expect(managedRow(h)?.last_error).toBeNull();
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "main" })).toBe(0);
    await until(async () => (await configErrors()) === 0, "the problem cleared");

    // The file turning manage_sync_configs off stops the daemon's applies at once.
    writeMirrors(h, { main: wiki({ users: ["user1@example.com"] }) }, { manage_sync_configs: false });
    await triggerPass(4);
    expect(managedRow(h)?.last_error).toBeNull();

    expect(passes(h).map((p) => p.outcome)).toEqual(["succeeded", "succeeded", "succeeded", "succeeded"]);
    expect(answered(h, PUT)).toBe(0);
    expect(remoteNamed(h.sim, "Wiki")).toEqual(before);
    expect(d.stderr()).not.toContain(h.sim.token);
    expect((await d.stop()).code).toBe(0);
  });

  it("takes a stop during its start-up apply as no failure: exit 0, no drift recorded, no pass; the next start applies", async () => {
    const h = suite.use(
      await createHarness({
        sim: DECLARED_SIM,
        defaults: { incremental_cron: EVERY_SECOND, full_cron: NEVER },
        api: { timeout_seconds: 120 },
      }),
    );
    writeMirrors(h, { good: wiki({ name: "Good" }) }, { manage_sync_configs: true });
    // The apply's first request is held until the stop.
    h.sim.faults.inject("*", { kind: "delay", ms: 60_000 });
    const d = await suite.daemon(h, { ready: false });
    await until(() => h.sim.faults.pending().length === 0, "the apply's first request held");
    const stopped = await d.stop();
    expect(stopped, d.stderr()).toMatchObject({ code: 0, signal: null });
    expect(d.logs().filter((l) => Number(l.level) >= 50)).toEqual([]);
    expect(managedRow(h, "good")?.last_error ?? null, "a stop is not drift").toBeNull();
    expect(JSON.parse((await h.cli(["problems", "--json"])).stdout).problems).toEqual([]);
    expect(d.logs().some((l) => l.msg === "daemon started")).toBe(false);
    expect(triggerPosts(h)).toBe(0);

    await started(h);
    expect(remoteNamed(h.sim, "Good")).toBeDefined();
    expect(managedRow(h, "good")?.last_error ?? null).toBeNull();
  });
});
