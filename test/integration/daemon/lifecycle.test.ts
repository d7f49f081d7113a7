/**
 * `syncmirror run` as a child process: readiness behind the database lock (SQLite) or beside a
 * `sync` (PostgreSQL), ticks coalesced while a trigger is in flight, SIGTERM drains and exits 0, a
 * restarted daemon finishes the same trigger.
 */
import { describe, expect, it } from "vitest";
import { openDatabase } from "../../../src/store/sqlite/open.js";
import { type DaemonProcess, parseLogLines, until } from "../../helpers/daemon.js";
import { onPostgres } from "../../helpers/dialect.js";
import { createHarness, expectedKeys, type Harness, visibleKeys } from "../../helpers/mirror-harness.js";
import { triggerPosts } from "../../helpers/requests.js";
import { daemonSuite, daemonWaitingOnScheduleRow, EVERY_SECOND, NEVER } from "./setup.js";

const EXPORT = "GET /sync-task/{sync_id}/export";

const suite = daemonSuite();
const daemon = suite.daemon;

function expectMirrorMatchesSimulator(harness: Harness): void {
  for (const user of harness.sim.users)
    expect(visibleKeys(harness, user)).toEqual(expectedKeys(harness.sim, user));
}

describe.skipIf(onPostgres)("SQLite only (the database file's writer lock): syncmirror run", () => {
  it("answers /readyz 503 while another process holds the database, 200 once it is free", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    const lock = openDatabase(h.dbPath, { lock: true });
    let d: DaemonProcess;
    try {
      d = await daemon(h, { ready: false });
      await until(() => d.stderr().includes("database locked by another process"), "the lock warning");
      expect((await d.get("/readyz")).status).toBe(503);
      expect((await d.get("/healthz")).status).toBe(200);
      const status = await d.get("/status");
      expect(status.status).toBe(503);
      expect(JSON.parse(status.body)).toEqual({
        error: { code: "NOT_READY", message: expect.stringMatching(/^not ready/) },
      });
    } finally {
      lock.close();
    }
    await until(async () => (await d.get("/readyz")).status === 200, "/readyz 200", 10_000);
    expect(JSON.parse((await d.get("/status")).body)).toHaveProperty("replicas");
    const stopped = await d.stop();
    expect(stopped.code).toBe(0);
  });

  it("exits 0 at once on SIGTERM while it waits for the database lock", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    const lock = openDatabase(h.dbPath, { lock: true });
    try {
      const d = await daemon(h, { ready: false });
      await until(() => d.stderr().includes("database locked by another process"), "the lock warning");
      const stopped = await d.stop();
      expect(stopped.code).toBe(0);
      expect(stopped.ms).toBeLessThan(10_000);
    } finally {
      lock.close();
    }
  });

  it("keeps a second writer out while it runs: sync exits 1 naming the lock", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    const d = await daemon(h);
    const second = await h.cli(["sync"]);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain("in use by another syncmirror process");
    expect(triggerPosts(h)).toBe(0);
    expect((await d.get("/readyz")).status).toBe(200);
    expect((await d.stop()).code).toBe(0);
  });
});

describe.runIf(onPostgres)("syncmirror run beside a sync on PostgreSQL", () => {
  it("lets a sync run the mirror between the daemon's passes: one database, no lock between them", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    const d = await daemon(h);
    const synced = await h.cli(["sync"]);
    expect(synced.code, synced.stdout + synced.stderr).toBe(0);
    expect(triggerPosts(h)).toBe(1);
    expectMirrorMatchesSimulator(h);
    expect((await d.get("/readyz")).status).toBe(200);
    expect((await d.stop()).code).toBe(0);
  });
});

describe.runIf(onPostgres)("SIGTERM while the database keeps the daemon waiting", () => {
  it("exits 0 within 10 s though a row it needs stays locked by another session", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    const { d, release } = await daemonWaitingOnScheduleRow(suite, h);
    try {
      const stopped = await d.stop();
      expect(stopped.code).toBe(0);
      expect(stopped.ms).toBeLessThan(10_000);
      expect(d.logs().some((l) => String(l.msg).startsWith("the drain did not finish"))).toBe(true);
    } finally {
      await release();
    }
  });
});

describe("syncmirror run", () => {
  it("coalesces and counts ticks while its pass runs, and POSTs /sync-task once meanwhile", async () => {
    const h = suite.use(
      await createHarness({ defaults: { incremental_cron: EVERY_SECOND, full_cron: NEVER } }),
    );
    h.sim.runs.hold();
    const d = await daemon(h);
    const harness = h;
    await until(() => triggerPosts(harness) > 0, "the trigger POST");
    await until(
      async () =>
        (await d.metric("syncmirror_ticks_skipped_total", { mirror: "main", reason: "in_flight" })) >= 2,
      "two ticks coalesced into the pass due after the running one",
    );
    expect(triggerPosts(h)).toBe(1);
    h.sim.runs.release();
    await until(
      async () =>
        (await d.metric("syncmirror_triggers_total", { mirror: "main", outcome: "succeeded" })) >= 1,
      "the first pass to succeed",
    );
    expect((await d.stop()).code).toBe(0);
  });

  it("exits 0 on SIGTERM while the runs are held; the restarted daemon finishes that trigger", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    const harness = h;
    h.sim.runs.hold();
    const first = await daemon(h);
    expect((await h.cli(["trigger", "--mirror", "main"])).code, "a pass asked for, taken by the daemon").toBe(
      0,
    );
    await until(() => h?.query("SELECT 1 FROM runs").length, "runs recorded in the database");
    const stopped = await first.stop();
    expect(stopped.code).toBe(0);
    expect(stopped.ms).toBeLessThan(10_000);
    expect(h.query("SELECT state FROM triggers")).toEqual([{ state: "active" }]);
    // A drain is not a failure: nothing at error level, so alerts on error logs stay quiet.
    expect(parseLogLines(first.stderr()).filter((l) => Number(l.level) >= 50)).toEqual([]);

    const second = await daemon(h);
    h.sim.runs.release();
    await until(
      () => harness.query("SELECT 1 FROM triggers WHERE state = 'done'").length,
      "the trigger to settle",
    );
    expect(triggerPosts(h)).toBe(1);
    expect(h.query("SELECT state FROM triggers")).toEqual([{ state: "done" }]);
    expectMirrorMatchesSimulator(h);
    expect((await second.stop()).code).toBe(0);
  });

  it("exits 0 on SIGTERM mid-ingest keeping the committed pages; the restart resumes at the next page", async () => {
    // One user seeing 1100 documents: the run's export spans three 500-resource pages.
    const h = suite.use(
      await createHarness({
        sim: { users: 1, docs: 1100, serversPerType: { notion: 1 } },
        defaults: { incremental_cron: NEVER, full_cron: NEVER },
      }),
    );
    const harness = h;
    h.sim.faults.inject(EXPORT, { kind: "delay", ms: 1500, times: Number.POSITIVE_INFINITY });
    const first = await daemon(h);
    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(() => harness.query("SELECT 1 FROM resources LIMIT 1").length, "the first page to commit");
    const committed = h.query<{ n: number }>("SELECT count(*) AS n FROM resources")[0]?.n;
    const stopped = await first.stop();
    expect(stopped.code).toBe(0);
    expect(stopped.ms).toBeLessThan(10_000);
    const [run] = h.query<{ ingest: string; next_offset: number }>("SELECT ingest, next_offset FROM runs");
    expect(run?.ingest).not.toBe("done");
    expect(run?.next_offset).toBeGreaterThan(0);
    expect(h.query<{ n: number }>("SELECT count(*) AS n FROM resources")[0]?.n).toBeGreaterThanOrEqual(
      committed ?? 1,
    );

    h.sim.faults.clear();
    const second = await daemon(h);
    await until(
      () => harness.query("SELECT 1 FROM triggers WHERE state = 'done'").length,
      "the trigger to settle",
    );
    expect(triggerPosts(h)).toBe(1);
    const firstPages = h.sim.requests.filter(
      (r) => r.route === "/sync-task/{sync_id}/export" && r.query.offset === "0",
    );
    expect(firstPages).toHaveLength(1);
    expectMirrorMatchesSimulator(h);
    expect(await second.metric("syncmirror_triggers_total", { mirror: "main", outcome: "succeeded" })).toBe(
      1,
    );
    expect((await second.stop()).code).toBe(0);
  });
});
