/**
 * `manage_sync_configs: true`, what the daemon cannot apply: an unknown server, the service's 5xx
 * on a replace or a create, its 409 when another config took the name meanwhile. Each is drift (the gauge, the counter, a `config_error` problem), the
 * daemon runs on and the mirror syncs with the config as applied; once the cause is gone the next
 * pass applies it, a full one. The drift gauge follows the record, whoever cleared it, and the
 * daemon deletes nothing upstream.
 */
import { describe, expect, it } from "vitest";
import { type DaemonProcess, until } from "../../helpers/daemon.js";
import { DECLARED_SIM, managedRow, remoteNamed, wiki, writeMirrors } from "../../helpers/declared-configs.js";
import { onPostgres } from "../../helpers/dialect.js";
import { createHarness, type Harness, visibleKeys } from "../../helpers/mirror-harness.js";
import { answered, triggerPosts } from "../../helpers/requests.js";
import { daemonSuite, EVERY_SECOND, NEVER } from "./setup.js";

const suite = daemonSuite();
const PUT = "PUT /sync-configs/{id}";
const POST = "POST /sync-configs";
const MANAGED = { manage_sync_configs: true };

function passes(h: Harness): { mode: string; outcome: string }[] {
  return h.query("SELECT mode, outcome FROM triggers WHERE state = 'done' ORDER BY id");
}

/** `maxAttempts`: fewer retries where the service's 5xx is meant to outlast them. */
async function harness(maxAttempts?: number): Promise<Harness> {
  return suite.use(
    await createHarness({
      sim: DECLARED_SIM,
      defaults: { incremental_cron: NEVER, full_cron: NEVER },
      ...(maxAttempts ? { maxAttempts } : {}),
    }),
  );
}

async function started(h: Harness): Promise<DaemonProcess> {
  const d = await suite.daemon(h);
  await until(() => d.logs().some((l) => l.msg === "daemon started"), "the daemon started");
  return d;
}

async function pass(h: Harness, n: number, mirror = "main"): Promise<void> {
  expect((await h.cli(["trigger", "--mirror", mirror])).code).toBe(0);
  await until(() => passes(h).length === n, `pass ${n}`);
}

async function problemReasons(h: Harness, mirror = "main"): Promise<string[]> {
  const res = await h.cli(["problems", "--mirror", mirror, "--json"]);
  const problems = JSON.parse(res.stdout).problems as { kind: string; reason: string }[];
  return problems.filter((p) => p.kind === "config_error").map((p) => p.reason);
}

describe("syncmirror run with manage_sync_configs: true, drift it cannot apply", () => {
  it("takes an unknown server name at start-up as drift naming the key, not a crash; the other mirror syncs", async () => {
    const h = await harness();
    writeMirrors(
      h,
      { main: wiki({ name: "Good" }), bad: wiki({ name: "Bad", servers: ["Team Wiki", "Gogle Drive"] }) },
      MANAGED,
    );
    const d = await started(h);
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "bad" })).toBe(1);
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "main" })).toBe(0);
    expect(await d.metric("syncmirror_sync_config_apply_errors_total", { mirror: "bad" })).toBe(1);
    expect(managedRow(h, "bad")?.last_error).toContain("mirrors[1].sync_config.servers[1]");
    expect((await problemReasons(h, "bad")).join()).toContain('named "Gogle Drive"');
    expect(h.sim.configs.list().map((c) => c.name)).not.toContain("Bad");
    await pass(h, 1);
    expect(passes(h)).toEqual([{ mode: "full", outcome: "succeeded" }]);
    expect(d.child.exitCode).toBeNull();
    expect((await d.stop()).code).toBe(0);
  });

  it("keeps syncing with the config as applied while the service answers a replace 500, then applies it before a full pass", async () => {
    const h = await harness(2);
    writeMirrors(h, { main: wiki() }, MANAGED);
    const d = await started(h);
    await pass(h, 1);
    const before = remoteNamed(h.sim, "Wiki");

    writeMirrors(h, { main: wiki({ users: ["user1@example.com"] }) }, MANAGED);
    h.sim.faults.inject(PUT, { kind: "500", times: Number.POSITIVE_INFINITY });
    await pass(h, 2);
    expect(passes(h)[1]).toEqual({ mode: "incremental", outcome: "succeeded" });
    expect(remoteNamed(h.sim, "Wiki")).toEqual(before);
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "main" })).toBe(1);
    expect(await d.metric("syncmirror_sync_config_apply_errors_total", { mirror: "main" })).toBe(1);
    expect(managedRow(h)?.last_error).toContain("500");
    expect(await problemReasons(h)).toHaveLength(1);

    h.sim.faults.clear();
    await pass(h, 3);
    expect(remoteNamed(h.sim, "Wiki").user_emails).toEqual(["user1@example.com"]);
    expect(passes(h)[2]).toEqual({ mode: "full", outcome: "succeeded" });
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "main" })).toBe(0);
    await until(async () => (await problemReasons(h)).length === 0, "the problem cleared");
    expect((await d.stop()).code).toBe(0);
  });

  it("takes the service's 500 on every create at start-up as drift, creates the config once the service answers, and only one", async () => {
    const h = await harness(2);
    writeMirrors(h, { main: wiki() }, MANAGED);
    h.sim.faults.inject(POST, { kind: "500", times: Number.POSITIVE_INFINITY });
    const d = await started(h);
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "main" })).toBe(1);
    expect(h.sim.configs.list().map((c) => c.name)).not.toContain("Wiki");
    expect(triggerPosts(h)).toBe(0);

    h.sim.faults.clear();
    await pass(h, 1);
    expect(passes(h)).toEqual([{ mode: "full", outcome: "succeeded" }]);
    expect(remoteNamed(h.sim, "Wiki")).toBeDefined();
    expect(answered(h, POST, 200) + answered(h, POST, 201)).toBe(1);
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "main" })).toBe(0);
    expect((await d.stop()).code).toBe(0);
  });

  it("takes a 409 on its create (the name taken meanwhile) as drift naming the key; it never takes that config over", async () => {
    const h = await harness();
    writeMirrors(h, { main: wiki() }, MANAGED);
    // Someone creates a config of the declared name while the daemon's create is on its way.
    h.sim.faults.inject(POST, { kind: "delay", ms: 3000 });
    const d = await suite.daemon(h);
    await until(() => h.sim.faults.pending().length === 0, "the create on its way");
    const foreign = h.sim.configs.create({ name: "Wiki" });
    await until(() => d.logs().some((l) => l.msg === "daemon started"), "the daemon started");
    expect(answered(h, POST, 409)).toBe(1);
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "main" })).toBe(1);
    expect(managedRow(h)?.last_error).toMatch(/^mirrors\[0\]\.sync_config\.name: .*already exists/);

    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(
      async () => (await d.metric("syncmirror_sync_config_apply_errors_total", { mirror: "main" })) === 2,
      "another attempt before the pass",
    );
    expect(managedRow(h)?.last_error).toContain("`syncmirror apply --adopt` takes it over");
    expect(remoteNamed(h.sim, "Wiki").id).toBe(foreign);
    expect(answered(h, PUT)).toBe(0);
    expect(triggerPosts(h)).toBe(0);
    expect(await problemReasons(h)).toHaveLength(1);
    expect((await d.stop()).code).toBe(0);
  });

  it("takes a 409 on a rename (the name taken meanwhile) as drift; the passes go on with the config as applied", async () => {
    const h = await harness();
    writeMirrors(h, { main: wiki() }, MANAGED);
    const d = await started(h);
    await pass(h, 1);
    const before = remoteNamed(h.sim, "Wiki");

    writeMirrors(h, { main: wiki({ name: "Wiki 2" }) }, MANAGED);
    // Held long enough for this process to create the name meanwhile: it only waits for `trigger` to exit.
    h.sim.faults.inject(PUT, { kind: "delay", ms: 1000 });
    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(() => h.sim.faults.pending().length === 0, "the rename on its way");
    h.sim.configs.create({ name: "Wiki 2" });
    await until(() => passes(h).length === 2, "pass 2");
    expect(answered(h, PUT, 409)).toBe(1);
    expect(passes(h)[1]).toEqual({ mode: "incremental", outcome: "succeeded" });
    expect(remoteNamed(h.sim, "Wiki")).toEqual(before);
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "main" })).toBe(1);
    expect(managedRow(h)?.last_error).toMatch(/^mirrors\[0\]\.sync_config\.name: /);
    expect((await d.stop()).code).toBe(0);
  });

  it("applies an edit made under its own pass in flight only once that pass ends, before the next trigger, a full one", async () => {
    const h = suite.use(
      await createHarness({
        sim: DECLARED_SIM,
        defaults: { incremental_cron: EVERY_SECOND, full_cron: NEVER },
      }),
    );
    writeMirrors(h, { main: wiki() }, MANAGED);
    h.sim.runs.hold();
    const d = await started(h);
    await until(() => triggerPosts(h) === 1, "the first pass in flight");
    writeMirrors(h, { main: wiki({ users: ["user1@example.com"] }) }, MANAGED);
    const skipped = () => d.metric("syncmirror_ticks_skipped_total", { mirror: "main", reason: "in_flight" });
    const seen = await skipped();
    await until(async () => (await skipped()) >= seen + 2, "ticks coalesced after the edit");
    expect(answered(h, PUT), "nothing replaced under the pass in flight").toBe(0);

    h.sim.runs.release();
    await until(() => passes(h).length >= 2, "the pass after the edit");
    const routes = h.sim.requests.map((r) => `${r.method} ${r.route}`);
    const put = routes.indexOf(PUT);
    expect(put).toBeGreaterThan(routes.indexOf("POST /sync-task"));
    expect(put).toBeLessThan(routes.lastIndexOf("POST /sync-task"));
    expect(passes(h).slice(0, 2)).toEqual([
      { mode: "full", outcome: "succeeded" },
      { mode: "full", outcome: "succeeded" },
    ]);
    expect(visibleKeys(h, "user2@example.com")).toEqual([]);
    expect(await d.metric("syncmirror_sync_config_drift", { mirror: "main" })).toBe(0);
    expect((await d.stop()).code).toBe(0);
  });

  it("deletes nothing upstream for a mirror the file no longer declares, at start-up or before its passes", async () => {
    const h = await harness();
    writeMirrors(h, { main: wiki(), old: wiki({ name: "Old" }) }, MANAGED);
    const first = await started(h);
    const old = remoteNamed(h.sim, "Old");
    expect((await first.stop()).code).toBe(0);

    writeMirrors(h, { main: wiki() }, MANAGED);
    const d = await started(h);
    await pass(h, 1);
    expect(answered(h, "DELETE /sync-configs/{id}")).toBe(0);
    expect(remoteNamed(h.sim, "Old")).toEqual(old);
    expect(managedRow(h, "old")?.sync_config_id).toBe(old.id);
    expect((await d.stop()).code).toBe(0);
  });
});

describe.runIf(onPostgres)("the drift gauge of replicas beside apply (PostgreSQL)", () => {
  it("goes back to 0 on every replica once the declaration is applied, by apply beside them or by another replica", async () => {
    const h = await harness();
    h.sim.people.leaveProject("user3@example.com");
    writeMirrors(h, { main: wiki({ users: ["user1@example.com", "user3@example.com"] }) }, MANAGED);
    const replicas = [await started(h), await started(h)];
    const drift = (d: DaemonProcess) => d.metric("syncmirror_sync_config_drift", { mirror: "main" });
    for (const d of replicas) expect(await drift(d)).toBe(1);

    // The user is back: the replica that runs the next pass applies it; the other one never tries.
    h.sim.people.joinProject("user3@example.com");
    await pass(h, 1);
    expect(managedRow(h)?.last_error).toBeNull();
    for (const d of replicas) await until(async () => (await drift(d)) === 0, "drift 0 on each replica");

    // Gone again, and taken out of the file: `apply` beside the replicas fixes it, before any pass.
    h.sim.people.leaveProject("user3@example.com");
    writeMirrors(h, { main: wiki({ users: ["user2@example.com", "user3@example.com"] }) }, MANAGED);
    await pass(h, 2);
    for (const d of replicas) await until(async () => (await drift(d)) === 1, "drift 1 on each replica");
    writeMirrors(h, { main: wiki({ users: ["user2@example.com"] }) }, MANAGED);
    const applied = await h.cli(["apply"]);
    expect(applied.code, applied.stdout + applied.stderr).toBe(0);
    for (const d of replicas) await until(async () => (await drift(d)) === 0, "drift 0 after apply");
    for (const d of replicas) expect((await d.stop()).code).toBe(0);
  });
});
