/**
 * `/metrics` of a running daemon follows the simulator's data; gauges come back from the database
 * after a restart; routes are templated; prom-client's process metrics are there.
 */
import { hostname } from "node:os";
import { describe, expect, it } from "vitest";
import type { Simulator } from "../../../src/simulator/index.js";
import { type DaemonProcess, parseMetrics, until } from "../../helpers/daemon.js";
import { onPostgres } from "../../helpers/dialect.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { triggerPosts } from "../../helpers/requests.js";
import { daemonSuite, EVERY_SECOND, NEVER, setCrons } from "./setup.js";

const MAIN = { mirror: "main" };
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

const suite = daemonSuite();
const daemon = suite.daemon;

/** The simulator's truth: live documents at least one user can see. */
function liveVisible(sim: Simulator): number {
  return sim.docs.list().filter((doc) => !doc.deleted && doc.visibleTo.length > 0).length;
}

function liveInDatabase(harness: Harness): number {
  return (
    harness.query<{ n: number }>(
      `SELECT count(DISTINCT a.key) AS n FROM resource_access a JOIN resources r ON r.key = a.key
       WHERE a.mirror = 'main' AND r.deleted_at IS NULL`,
    )[0]?.n ?? -1
  );
}

async function passes(d: DaemonProcess, mode: string, atLeast: number): Promise<void> {
  await until(
    async () =>
      (await d.metric("syncmirror_triggers_total", { ...MAIN, mode, outcome: "succeeded" })) >= atLeast,
    `${atLeast} succeeded ${mode} pass(es)`,
  );
}

describe("syncmirror run: /metrics", () => {
  it("moves counters and gauges as the simulator's data changes", async () => {
    const h = suite.use(
      await createHarness({ defaults: { incremental_cron: EVERY_SECOND, full_cron: NEVER } }),
    );
    const startedAt = Date.now() / 1000;
    const d = await daemon(h);
    await passes(d, "full", 1); // no watermark yet: the first pass is a full snapshot
    const total = liveVisible(h.sim);
    expect(await d.metric("syncmirror_resources", MAIN)).toBe(total);
    expect(await d.metric("syncmirror_resources_upserted_total", MAIN)).toBe(total);
    expect(await d.metric("syncmirror_runs_total", { ...MAIN, status: "completed" })).toBeGreaterThanOrEqual(
      h.sim.users.length,
    );
    expect(await d.metric("syncmirror_sources_total", { ...MAIN, status: "ok" })).toBeGreaterThan(0);
    expect(await d.metric("syncmirror_sync_duration_seconds_count", { ...MAIN, mode: "full" })).toBe(1);
    const lastFull = await d.metric("syncmirror_last_success_timestamp_seconds", { ...MAIN, mode: "full" });
    expect(lastFull).toBeGreaterThanOrEqual(Math.floor(startedAt));
    expect(lastFull).toBeLessThanOrEqual(Date.now() / 1000);
    expect(
      await d.metric("syncmirror_api_requests_total", { method: "POST", route: "/sync-task", code: "201" }),
    ).toBeGreaterThanOrEqual(1);

    await passes(d, "incremental", 1);
    const [edited] = h.sim.docs.list().filter((doc) => doc.visibleTo.length > 0);
    const server = h.sim.servers[0];
    if (!edited || !server) throw new Error("the simulator has no visible document");
    h.sim.docs.edit(edited.docId);
    h.sim.docs.add({ server_instance_id: server.server_instance_id, visibleTo: [h.sim.users[0] as string] });
    const upsertedBefore = await d.metric("syncmirror_resources_upserted_total", MAIN);
    await until(
      async () => (await d.metric("syncmirror_resources", MAIN)) === total + 1,
      "the added document in syncmirror_resources",
    );
    await until(
      async () => (await d.metric("syncmirror_resources_upserted_total", MAIN)) >= upsertedBefore + 2,
      "the edit and the addition counted as upserts",
    );
    expect(
      await d.metric("syncmirror_last_success_timestamp_seconds", { ...MAIN, mode: "incremental" }),
    ).toBeGreaterThanOrEqual(lastFull);
    expect((await d.stop()).code).toBe(0);
  });

  it("restores gauges from the database after a restart; a full pass counts what it swept", async () => {
    const h = suite.use(
      await createHarness({ defaults: { incremental_cron: EVERY_SECOND, full_cron: NEVER } }),
    );
    const [left] = h.sim.users;
    const server = h.sim.servers[1];
    if (!left || !server) throw new Error("the simulator has too few users or servers");
    h.sim.people.setAuth(left, server.server_instance_id, "not_authenticated");
    const first = await daemon(h);
    await passes(first, "full", 1);
    const lastFull = await first.metric("syncmirror_last_success_timestamp_seconds", {
      ...MAIN,
      mode: "full",
    });
    expect(await first.metric("syncmirror_skipped_pairs", { ...MAIN, reason: "not_accessible" })).toBe(1);
    const awaiting = await first.metric("syncmirror_pairs_awaiting_baseline", MAIN);
    expect((await first.stop()).code).toBe(0);

    setCrons(h, { incremental_cron: NEVER, full_cron: NEVER });
    const live = liveInDatabase(h);
    expect(live).toBeGreaterThan(0);
    const second = await daemon(h);
    // The first scrape after ready, with no pass run by this process.
    const samples = parseMetrics((await second.get("/metrics")).body);
    const value = (name: string, labels: Record<string, string> = {}) =>
      samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        ?.value;
    expect(value("syncmirror_resources", MAIN)).toBe(live);
    expect(value("syncmirror_pairs_awaiting_baseline", MAIN)).toBe(awaiting);
    expect(value("syncmirror_held_revocations", MAIN)).toBe(0);
    expect(value("syncmirror_skipped_pairs", { ...MAIN, reason: "not_accessible" })).toBe(1);
    expect(value("syncmirror_last_success_timestamp_seconds", { ...MAIN, mode: "full" })).toBeCloseTo(
      lastFull,
      0,
    );
    expect(value("syncmirror_triggers_total", { ...MAIN, mode: "full", outcome: "failed" })).toBe(0);
    expect(await second.stop()).toMatchObject({ code: 0 });

    const [gone] = h.sim.docs
      .list()
      .filter((doc) => doc.visibleTo.length > 0 && !doc.visibleTo.includes(left));
    if (!gone) throw new Error("no document to remove");
    h.sim.docs.remove(gone.docId);
    setCrons(h, { incremental_cron: NEVER, full_cron: EVERY_SECOND });
    const third = await daemon(h);
    await passes(third, "full", 1);
    expect(await third.metric("syncmirror_resources", MAIN)).toBe(live - 1);
    expect(await third.metric("syncmirror_resources_deleted_total", MAIN)).toBe(1);
    expect(await third.metric("syncmirror_access_revoked_total", MAIN)).toBe(gone.visibleTo.length);
    expect(await third.metric("syncmirror_resources_unchanged_total", MAIN)).toBeGreaterThanOrEqual(live - 1);
    expect((await third.stop()).code).toBe(0);
  });

  it("serves a mirror paused before the daemon started as paused from the first scrape", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    const paused = await h.cli(["pause", "--mirror", "main"]);
    expect(paused.code, paused.stderr).toBe(0);
    const d = await daemon(h);
    // The first scrape after ready, before the scheduler has read the schedules.
    const samples = parseMetrics((await d.get("/metrics")).body);
    expect(
      samples.find((s) => s.name === "syncmirror_mirror_paused" && s.labels.mirror === "main")?.value,
    ).toBe(1);
    const resumed = await h.cli(["resume", "--mirror", "main"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    await until(
      async () => (await d.metric("syncmirror_mirror_paused", MAIN)) === 0,
      "the resume in the gauge",
    );
    expect((await d.stop()).code).toBe(0);
  });

  // A SQLite database is one process's: another cannot run a pass beside the daemon.
  it.runIf(onPostgres)(
    "follows a pass another process ran in its gauges (another replica, a one-shot sync)",
    async () => {
      const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
      const d = await daemon(h);
      expect(await d.metric("syncmirror_resources", MAIN)).toBe(0);
      const startedAt = Math.floor(Date.now() / 1000);
      // A real `sync` process, under the mirror's lease as any other process's pass.
      const other = await h.cli(["sync"]);
      expect(other.code, other.stderr).toBe(0);
      const live = liveInDatabase(h);
      expect(live).toBe(liveVisible(h.sim));
      await until(
        async () => (await d.metric("syncmirror_resources", MAIN)) === live,
        "the other process's pass in syncmirror_resources",
      );
      expect(
        await d.metric("syncmirror_last_success_timestamp_seconds", { ...MAIN, mode: "full" }),
      ).toBeGreaterThanOrEqual(startedAt);
      expect(
        await d.metric("syncmirror_triggers_total", { ...MAIN, mode: "full", outcome: "succeeded" }),
      ).toBe(0);
      expect((await d.stop()).code).toBe(0);
    },
  );

  it("templates the route label and serves prom-client's process metrics", async () => {
    const h = suite.use(
      await createHarness({ defaults: { incremental_cron: EVERY_SECOND, full_cron: NEVER } }),
    );
    const d = await daemon(h);
    await passes(d, "full", 1);
    const samples = parseMetrics((await d.get("/metrics")).body);
    const routes = new Set(samples.filter((s) => s.labels.route !== undefined).map((s) => s.labels.route));
    expect(routes).toContain("/sync-task"); // POST trigger and GET run list (its query string dropped)
    expect(routes).toContain("/sync-task/{sync_id}/export");
    for (const route of routes) expect(route).not.toMatch(UUID);
    const ids = [h.sim.syncConfigId, ...h.sim.runs.list().map((r) => r.sync_id)];
    const text = (await d.get("/metrics")).body;
    for (const id of ids) expect(text).not.toContain(id);
    const names = new Set(samples.map((s) => s.name));
    for (const name of [
      "process_cpu_user_seconds_total",
      "process_start_time_seconds",
      "nodejs_heap_size_used_bytes",
    ])
      expect(names).toContain(name);
    expect((await d.stop()).code).toBe(0);
  });

  it("counts one lease takeover, logged at warn, when a daemon killed with kill -9 mid-pass is started again", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    const harness = h;
    h.sim.runs.hold();
    const killed = await daemon(h);
    const killedName = `${hostname()}:${killed.child.pid}`;
    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(() => harness.query("SELECT 1 FROM runs").length, "runs recorded under the daemon's lease");
    killed.child.kill("SIGKILL");
    await killed.exited;

    const restarted = await daemon(h);
    h.sim.runs.release();
    await until(
      () => harness.query("SELECT 1 FROM triggers WHERE state = 'done'").length,
      "the killed daemon's trigger finished by the restarted one",
    );
    expect(triggerPosts(h), "resumed, not posted again").toBe(1);
    expect(await restarted.metric("syncmirror_lease_takeovers_total", MAIN)).toBe(1);
    expect(
      restarted.logs().find((l) => String(l.msg).startsWith("took over the lease of mirror main")),
    ).toMatchObject({ level: 40, dead_holder: killedName, dead_epoch: 1, epoch: 2 });
    expect(
      h.query("SELECT epoch FROM leases WHERE mirror = 'main'"),
      "every takeover moves the epoch on",
    ).toEqual([{ epoch: 2 }]);
    expect((await restarted.stop()).code).toBe(0);
  });

  it("serves every counter series of each configured mirror at 0 before its first event", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    const d = await daemon(h);
    const samples = parseMetrics((await d.get("/metrics")).body);
    const series = (name: string, labels: Record<string, string>) =>
      samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
    for (const name of [
      "syncmirror_resources_deleted_total",
      "syncmirror_access_revoked_total",
      "syncmirror_sweeps_held_total",
      "syncmirror_lease_takeovers_total",
      "syncmirror_mirror_held",
    ])
      expect(series(name, MAIN)?.value, name).toBe(0);
    const sourceTypes = ["notion", "google_drive", "google_docs", "github"];
    for (const name of ["syncmirror_resources_upserted_total", "syncmirror_resources_unchanged_total"])
      for (const source_type of sourceTypes)
        expect(series(name, { ...MAIN, source_type })?.value, `${name} ${source_type}`).toBe(0);
    for (const status of ["completed", "incomplete", "failed"])
      expect(series("syncmirror_runs_total", { ...MAIN, status })?.value, `runs ${status}`).toBe(0);
    for (const source_type of sourceTypes)
      for (const status of ["ok", "no_results", "authentication_required", "degraded", "config_stale"])
        expect(
          series("syncmirror_sources_total", { ...MAIN, source_type, status })?.value,
          `sources ${source_type} ${status}`,
        ).toBe(0);
    for (const mode of ["incremental", "full"]) {
      expect(series("syncmirror_ticks_skipped_total", { ...MAIN, mode })?.value, mode).toBe(0);
      expect(series("syncmirror_triggers_total", { ...MAIN, mode, outcome: "failed" })?.value, mode).toBe(0);
    }
    expect((await d.stop()).code).toBe(0);
  });
});
