/**
 * Outside acceptance of `/metrics` (docs/reference/metrics.md) against a real `run` daemon, pass by
 * pass, on both stores: each scenario's exact values, label values only from the documented sets,
 * and the gauges the database holds served from the first scrape after a restart.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { openDatabase } from "../../../src/store/sqlite/open.js";
import { type DaemonProcess, parseMetrics, readScrape, startDaemon, until } from "../../helpers/daemon.js";
import { onPostgres } from "../../helpers/dialect.js";
import { accessOfSourceType } from "../../helpers/mirror-db.js";
import {
  createHarness,
  DATABASE_URL_ENV,
  type Harness,
  type HarnessOptions,
} from "../../helpers/mirror-harness.js";
import { startCuttableProxy } from "../../helpers/tcp-proxy.js";
import { buildOnce, editConfig, NEVER } from "./setup.js";

const HTTP_TOKEN = "acceptance-bearer-5c1e";
const MAIN = { mirror: "main" };

let h: Harness;
let d: DaemonProcess;

beforeAll(async () => {
  buildOnce();
  h = await createHarness({
    sim: { users: 4, docs: 60 },
    defaults: { incremental_cron: NEVER, full_cron: NEVER },
  });
  d = await start();
});

afterAll(async () => {
  await d?.stop("SIGKILL");
  await h?.close();
});

async function start(): Promise<DaemonProcess> {
  const daemon = await startDaemon(h, { SYNCMIRROR_HTTP_TOKEN: HTTP_TOKEN });
  await until(async () => (await daemon.get("/readyz")).status === 200, "/readyz 200");
  return daemon;
}

type Scrape = Awaited<ReturnType<typeof scrape>>;

async function scrape() {
  const res = await d.get("/metrics");
  expect(res.status).toBe(200);
  return readScrape(res.body);
}

async function post(path: string, body?: object): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${d.port}${path}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${HTTP_TOKEN}` },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return res.status;
}

async function pass(body?: object): Promise<Scrape> {
  const total = (await d.metric("syncmirror_triggers_total", MAIN)) + 1;
  expect(await post("/v1/mirrors/main/trigger", body)).toBe(200);
  await until(
    async () => (await d.metric("syncmirror_triggers_total", MAIN)) >= total,
    `pass ${total} counted`,
  );
  return scrape();
}

/** Live keys visible through main, from the mirror. */
function liveKeys(): number {
  return liveKeysOf(h, "main") ?? -1;
}

function accessRows(user?: string): number {
  return (
    h.query<{ n: number }>(
      `SELECT count(*) AS n FROM resource_access WHERE mirror = 'main'${user ? " AND user_email = ?" : ""}`,
      ...(user ? [user] : []),
    )[0]?.n ?? -1
  );
}

const ALLOWED: Record<string, Record<string, string[]>> = {
  syncmirror_triggers_total: {
    mode: ["incremental", "full"],
    outcome: ["succeeded", "partial", "failed", "refused"],
  },
  syncmirror_runs_total: { status: ["completed", "incomplete", "failed"] },
  syncmirror_last_success_timestamp_seconds: { mode: ["incremental", "full"] },
  syncmirror_sync_duration_seconds_bucket: { mode: ["incremental", "full"] },
  syncmirror_sync_duration_seconds_count: { mode: ["incremental", "full"] },
  syncmirror_ticks_skipped_total: { mode: ["incremental", "full"] },
  syncmirror_sources_total: {
    status: ["ok", "no_results", "authentication_required", "degraded", "config_stale"],
  },
};

function expectDocumentedLabels(s: Scrape): void {
  for (const sample of s.samples)
    for (const [label, allowed] of Object.entries(ALLOWED[sample.name] ?? {}))
      expect(allowed, `${sample.name} ${label}=${sample.labels[label]}`).toContain(sample.labels[label]);
  for (const sample of s.samples.filter((x) => x.name.startsWith("syncmirror_api_request")))
    expect(sample.labels.route, sample.name).toMatch(/^\/[a-z/_{}-]*$/);
  for (const user of h.sim.users) expect(s.text).not.toContain(user);
  expect(s.text).not.toContain(h.sim.token);
  expect(s.text).not.toContain(HTTP_TOKEN);
}

describe("/metrics acceptance", () => {
  let afterFirst: Scrape;

  it("first pass is full with exact counts; an unchanged incremental upserts nothing", async () => {
    const startedAt = Math.floor(Date.now() / 1000);
    h.sim.faults.inject("POST /sync-task", { kind: "429", retryAfterSeconds: 0, times: 1 });
    h.sim.faults.inject("GET /sync-task", { kind: "503", retryAfterSeconds: 0, times: 1 });
    afterFirst = await pass(); // asked as incremental, sends no since
    const s = afterFirst;
    expectDocumentedLabels(s);
    expect(s.value("syncmirror_triggers_total", { ...MAIN, mode: "full", outcome: "succeeded" })).toBe(1);
    expect(s.value("syncmirror_triggers_total", { ...MAIN, mode: "incremental" })).toBe(0);
    expect(s.value("syncmirror_sync_duration_seconds_count", { ...MAIN, mode: "full" })).toBe(1);
    expect(s.value("syncmirror_resources", MAIN)).toBe(liveKeys());
    expect(s.value("syncmirror_resources_upserted_total", MAIN)).toBe(liveKeys());
    expect(
      s.value("syncmirror_resources_upserted_total", MAIN) +
        s.value("syncmirror_resources_unchanged_total", MAIN),
    ).toBe(accessRows());
    expect(s.value("syncmirror_runs_total", { ...MAIN, status: "completed" })).toBe(h.sim.users.length);
    expect(s.value("syncmirror_pairs_awaiting_baseline", MAIN)).toBe(0);
    expect(s.value("syncmirror_skipped_pairs", MAIN)).toBe(0);
    const last = s.value("syncmirror_last_success_timestamp_seconds", { ...MAIN, mode: "full" });
    expect(last).toBeGreaterThanOrEqual(startedAt);
    expect(s.has("syncmirror_last_success_timestamp_seconds", { ...MAIN, mode: "incremental" })).toBe(false);
    expect(
      s.value("syncmirror_api_requests_total", { method: "POST", route: "/sync-task", code: "429" }),
    ).toBe(1);
    expect(
      s.value("syncmirror_api_requests_total", { method: "POST", route: "/sync-task", code: "201" }),
    ).toBe(1);
    expect(
      s.value("syncmirror_api_requests_total", { method: "GET", route: "/sync-task", code: "503" }),
    ).toBe(1);
    expect(s.value("syncmirror_mirror_paused", MAIN)).toBe(0);
    expect(s.value("syncmirror_problems", MAIN)).toBe(0);

    const inc = await pass();
    expect(
      inc.value("syncmirror_triggers_total", { ...MAIN, mode: "incremental", outcome: "succeeded" }),
    ).toBe(1);
    expect(inc.value("syncmirror_resources_upserted_total", MAIN)).toBe(
      s.value("syncmirror_resources_upserted_total", MAIN),
    );
    expect(inc.value("syncmirror_resources_unchanged_total", MAIN)).toBeGreaterThanOrEqual(
      s.value("syncmirror_resources_unchanged_total", MAIN),
    );
    expect(inc.value("syncmirror_resources", MAIN)).toBe(s.value("syncmirror_resources", MAIN));
    expect(
      inc.value("syncmirror_last_success_timestamp_seconds", { ...MAIN, mode: "incremental" }),
    ).toBeGreaterThanOrEqual(last);

    const full = await pass({ mode: "full" });
    expect(full.value("syncmirror_resources_upserted_total", MAIN)).toBe(
      s.value("syncmirror_resources_upserted_total", MAIN),
    );
    expect(
      full.value("syncmirror_resources_unchanged_total", MAIN) -
        inc.value("syncmirror_resources_unchanged_total", MAIN),
    ).toBe(accessRows());
  });

  it("a skipped pair counts while the latest trigger skips it, then drops back", async () => {
    const [user] = h.sim.users;
    const server = h.sim.servers[0];
    if (!user || !server) throw new Error("no user");
    h.sim.people.setAuth(user, server.server_instance_id, "not_authenticated");
    const skipped = await pass();
    expect(skipped.value("syncmirror_skipped_pairs", { ...MAIN, reason: "not_accessible" })).toBe(1);
    expect(skipped.value("syncmirror_skipped_pairs", MAIN)).toBe(1);
    expect(skipped.value("syncmirror_problems", { ...MAIN, kind: "skipped_pair" })).toBe(1);
    expect(
      skipped.value("syncmirror_triggers_total", { ...MAIN, mode: "incremental", outcome: "succeeded" }),
    ).toBe(2);
    h.sim.people.setAuth(user, server.server_instance_id, "authenticated");
    const back = await pass();
    expect(back.value("syncmirror_skipped_pairs", MAIN)).toBe(0);
    expect(back.value("syncmirror_problems", { ...MAIN, kind: "skipped_pair" })).toBe(0);
  });

  it("deletes and a user who left: revoked and deleted counts, resources drop", async () => {
    const before = await scrape();
    const [, , , leaver] = h.sim.users;
    if (!leaver) throw new Error("no user");
    const [gone] = h.sim.docs
      .list()
      .filter((doc) => !doc.deleted && doc.visibleTo.length > 1 && !doc.visibleTo.includes(leaver));
    if (!gone) throw new Error("no doc");
    h.sim.docs.remove(gone.docId);
    const leaverRows = accessRows(leaver);
    const onlyLeaver = h.sim.docs
      .list()
      .filter((doc) => !doc.deleted && doc.visibleTo.length === 1 && doc.visibleTo[0] === leaver).length;
    expect(leaverRows).toBeGreaterThan(0);
    h.sim.people.leaveProject(leaver);
    const liveBefore = liveKeys();
    const full = await pass({ mode: "full" });
    expect(full.value("syncmirror_triggers_total", { ...MAIN, mode: "full", outcome: "succeeded" })).toBe(3);
    expect(full.value("syncmirror_resources", MAIN)).toBe(liveKeys());
    expect(liveKeys()).toBe(liveBefore - 1 - onlyLeaver);
    expect(
      full.value("syncmirror_resources_deleted_total", MAIN) -
        before.value("syncmirror_resources_deleted_total", MAIN),
    ).toBe(1 + onlyLeaver);
    expect(
      full.value("syncmirror_access_revoked_total", MAIN) -
        before.value("syncmirror_access_revoked_total", MAIN),
    ).toBe(gone.visibleTo.length + leaverRows);
    expect(accessRows(leaver)).toBe(0);

    // Back in the project, first seen again in an incremental: awaits a baseline until a full.
    h.sim.people.joinProject(leaver);
    const inc = await pass();
    expect(
      inc.value("syncmirror_triggers_total", { ...MAIN, mode: "incremental", outcome: "succeeded" }),
    ).toBe(4);
    const awaiting = inc.value("syncmirror_pairs_awaiting_baseline", MAIN);
    const full2 = await pass({ mode: "full" });
    expect(full2.value("syncmirror_pairs_awaiting_baseline", MAIN)).toBe(0);
    expect({ awaiting }).toEqual({ awaiting: h.sim.servers.length });
  });

  it("a resource nobody sees is deleted; seen again it is upserted and live", async () => {
    const before = await scrape();
    const [doc] = h.sim.docs.list().filter((x) => !x.deleted && x.visibleTo.length > 0);
    if (!doc) throw new Error("no doc");
    const viewers = doc.visibleTo;
    h.sim.docs.setVisibility(doc.docId, []);
    const hidden = await pass({ mode: "full" });
    expect(hidden.value("syncmirror_resources", MAIN)).toBe(before.value("syncmirror_resources", MAIN) - 1);
    expect(
      hidden.value("syncmirror_resources_deleted_total", MAIN) -
        before.value("syncmirror_resources_deleted_total", MAIN),
    ).toBe(1);
    expect(
      hidden.value("syncmirror_access_revoked_total", MAIN) -
        before.value("syncmirror_access_revoked_total", MAIN),
    ).toBe(viewers.length);
    h.sim.docs.setVisibility(doc.docId, viewers);
    const back = await pass({ mode: "full" });
    expect(back.value("syncmirror_resources", MAIN)).toBe(before.value("syncmirror_resources", MAIN));
    expect(
      back.value("syncmirror_resources_upserted_total", MAIN) -
        hidden.value("syncmirror_resources_upserted_total", MAIN),
    ).toBe(1);
  });

  it("a held sweep: counted, held revocations gauged, problems, partial; approved it applies", async () => {
    const before = await scrape();
    const github = h.sim.servers.find((x) => x.source_type === "github")?.server_instance_id;
    for (const doc of h.sim.docs.list())
      if (doc.server_instance_id === github && !doc.deleted) h.sim.docs.remove(doc.docId);
    const held = await pass({ mode: "full" });
    expect(held.value("syncmirror_triggers_total", { ...MAIN, mode: "full", outcome: "partial" })).toBe(
      before.value("syncmirror_triggers_total", { ...MAIN, mode: "full", outcome: "partial" }) + 1,
    );
    const kept = h.query<{ user_email: string; n: number }>(
      `SELECT a.user_email, count(*) AS n FROM resource_access a JOIN resources r ON r.key = a.key
       WHERE a.mirror = 'main' AND r.source_type = 'github' GROUP BY a.user_email`,
    );
    const heldBack = kept.reduce((n, k) => n + k.n, 0);
    // The gauge counts keys: a github document several users see is one revocation held back.
    const heldKeys = accessOfSourceType(h, "github").keys;
    expect(
      held.value("syncmirror_sweeps_held_total", MAIN) - before.value("syncmirror_sweeps_held_total", MAIN),
    ).toBe(kept.length);
    expect(held.value("syncmirror_held_revocations", MAIN)).toBe(heldKeys);
    expect(held.value("syncmirror_problems", { ...MAIN, kind: "held_sweep" })).toBe(kept.length);
    expect(held.value("syncmirror_last_success_timestamp_seconds", { ...MAIN, mode: "full" })).toBe(
      before.value("syncmirror_last_success_timestamp_seconds", { ...MAIN, mode: "full" }),
    );
    expect(held.value("syncmirror_access_revoked_total", MAIN)).toBe(
      before.value("syncmirror_access_revoked_total", MAIN),
    );
    // An incremental between them holds the same back.
    const inc = await pass();
    expect(inc.value("syncmirror_held_revocations", MAIN)).toBe(heldKeys);
    expect(await post("/v1/mirrors/main/approve-sweep")).toBe(200);
    const applied = await pass({ mode: "full" });
    expect(applied.value("syncmirror_held_revocations", MAIN)).toBe(0);
    expect(applied.value("syncmirror_problems", MAIN)).toBe(0);
    expect(
      applied.value("syncmirror_access_revoked_total", MAIN) -
        held.value("syncmirror_access_revoked_total", MAIN),
    ).toBe(heldBack);
    expect(applied.value("syncmirror_resources", MAIN)).toBe(liveKeys());
  });

  it("serves the paused gauge, and every stored gauge again from the first scrape after a restart; counters restart at 0", async () => {
    expect(await post("/v1/mirrors/main/pause")).toBe(200);
    await until(async () => (await d.metric("syncmirror_mirror_paused", MAIN)) === 1, "paused gauge");
    const held = await scrape();
    expect((await d.stop()).code).toBe(0);
    d = await start();
    const first = await scrape();
    for (const name of [
      "syncmirror_resources",
      "syncmirror_skipped_pairs",
      "syncmirror_pairs_awaiting_baseline",
      "syncmirror_held_revocations",
      "syncmirror_mirror_paused",
      "syncmirror_problems",
    ])
      expect(first.value(name, MAIN), name).toBe(held.value(name, MAIN));
    for (const mode of ["full", "incremental"])
      expect(first.value("syncmirror_last_success_timestamp_seconds", { ...MAIN, mode }), mode).toBe(
        held.value("syncmirror_last_success_timestamp_seconds", { ...MAIN, mode }),
      );
    expect(first.value("syncmirror_mirror_paused", MAIN)).toBe(1);
    expectDocumentedLabels(first);
    // Counters restart at zero (a reset), never from some other value.
    expect(first.value("syncmirror_triggers_total", MAIN)).toBe(0);
    expect(first.value("syncmirror_resources_upserted_total", MAIN)).toBe(0);
    expect(await post("/v1/mirrors/main/resume")).toBe(200);
    await until(async () => (await d.metric("syncmirror_mirror_paused", MAIN)) === 0, "resumed gauge");
  });
});

/** A harness of its own and daemons on it, all closed when the test ends; passes asked for over HTTP. */
async function own(options: HarnessOptions = {}) {
  const harness = await createHarness({
    ...options,
    defaults: { incremental_cron: NEVER, full_cron: NEVER, ...options.defaults },
  });
  const daemons: DaemonProcess[] = [];
  onTestFinished(async () => {
    for (const x of daemons) await x.stop("SIGKILL");
    await harness.close();
  });
  const daemon = async (env: Record<string, string> = {}, ready = true) => {
    const x = await startDaemon(harness, { SYNCMIRROR_HTTP_TOKEN: HTTP_TOKEN, ...env });
    daemons.push(x);
    if (ready) await until(async () => (await x.get("/readyz")).status === 200, "/readyz 200");
    return x;
  };
  /** Asks `on` for a pass of `mirror` and waits until `counted` (summed over `daemons`) reaches `n`. */
  const passOn = async (on: DaemonProcess, n: number, o: { mirror?: string; full?: boolean } = {}) => {
    const mirror = o.mirror ?? "main";
    const res = await fetch(`http://127.0.0.1:${on.port}/v1/mirrors/${mirror}/trigger`, {
      method: "POST",
      headers: { Authorization: `Bearer ${HTTP_TOKEN}` },
      ...(o.full ? { body: JSON.stringify({ mode: "full" }) } : {}),
    });
    expect(res.status).toBe(200);
    await until(async () => {
      let total = 0;
      for (const x of daemons) total += await x.metric("syncmirror_triggers_total", { mirror });
      return total >= n;
    }, `pass ${n} of ${mirror} counted`);
  };
  return { h: harness, daemon, passOn };
}

function firstPair(x: Harness): { user: string; server: string } {
  const [user] = x.sim.users;
  const server = x.sim.servers[0]?.server_instance_id;
  if (!user || !server) throw new Error("the simulator has no user or server");
  return { user, server };
}

describe("/metrics around restarts and lost answers", () => {
  it("after kill -9 with a trigger in flight, serves its skipped pairs and the stored gauges from the first scrape", async () => {
    const { h: x, daemon } = await own();
    expect((await x.sync()).outcome).toBe("succeeded");
    const { user, server } = firstPair(x);
    x.sim.people.setAuth(user, server, "not_authenticated");
    x.sim.runs.hold();
    const killed = await daemon();
    expect((await x.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    const notAccessible = { ...MAIN, reason: "not_accessible" };
    await until(
      async () => (await killed.metric("syncmirror_skipped_pairs", notAccessible)) === 1,
      "the in-flight trigger's skipped pair in the gauge",
    );
    const live = await killed.metric("syncmirror_resources", MAIN);
    const lastFull = await killed.metric("syncmirror_last_success_timestamp_seconds", {
      ...MAIN,
      mode: "full",
    });
    expect(live).toBeGreaterThan(0);
    killed.child.kill("SIGKILL");
    await killed.exited;

    const restarted = await daemon();
    // The first scrape after ready, before the resumed pass can end (its runs are held).
    const first = readScrape((await restarted.get("/metrics")).body);
    expect(first.value("syncmirror_skipped_pairs", notAccessible)).toBe(1);
    expect(first.value("syncmirror_resources", MAIN)).toBe(live);
    expect(first.value("syncmirror_last_success_timestamp_seconds", { ...MAIN, mode: "full" })).toBe(
      lastFull,
    );
    x.sim.runs.release();
    const resumed = { ...MAIN, mode: "incremental", outcome: "succeeded" };
    await until(
      async () => (await restarted.metric("syncmirror_triggers_total", resumed)) === 1,
      "the resumed pass counted by the new process",
    );
    expect(await restarted.metric("syncmirror_skipped_pairs", notAccessible)).toBe(1);
  });

  it("counts a trigger POST whose answer was lost as `error`, one pass, and keeps the last answered trigger's skipped pairs", async () => {
    const { h: x, daemon, passOn } = await own();
    const { user, server } = firstPair(x);
    x.sim.people.setAuth(user, server, "not_authenticated");
    const dd = await daemon();
    await passOn(dd, 1);
    expect(await dd.metric("syncmirror_skipped_pairs", MAIN)).toBe(1);
    x.sim.faults.inject("POST /sync-task", { kind: "drop-after" });
    await passOn(dd, 2);
    expect(x.query("SELECT adopted FROM triggers ORDER BY id")).toEqual([{ adopted: 0 }, { adopted: 1 }]);
    expect(
      await dd.metric("syncmirror_triggers_total", { ...MAIN, mode: "incremental", outcome: "succeeded" }),
    ).toBe(1);
    expect(
      await dd.metric("syncmirror_api_requests_total", {
        method: "POST",
        route: "/sync-task",
        code: "error",
      }),
    ).toBe(1);
    expect(await dd.metric("syncmirror_skipped_pairs", MAIN)).toBe(1);
  });

  it("counts a rejected token as failed in the planned mode, and each run of a resumed trigger once", async () => {
    const { h: x, daemon, passOn } = await own();
    const dd = await daemon();
    x.sim.faults.inject("POST /sync-task", { kind: "401" });
    await passOn(dd, 1);
    expect(await dd.metric("syncmirror_triggers_total", { ...MAIN, mode: "full", outcome: "failed" })).toBe(
      1,
    );
    expect(await dd.metric("syncmirror_api_requests_total", { route: "/sync-task", code: "401" })).toBe(1);
    expect(await dd.metric("syncmirror_sync_duration_seconds_count", { ...MAIN, mode: "full" })).toBe(1);
    expect((await dd.get("/metrics")).body).not.toContain("syncmirror_last_success_timestamp_seconds{");
    await passOn(dd, 2);
    x.sim.faults.inject("GET /sync-task/{sync_id}/export", { kind: "401" });
    await passOn(dd, 3);
    expect(
      await dd.metric("syncmirror_triggers_total", { ...MAIN, mode: "incremental", outcome: "failed" }),
    ).toBe(1);
    await passOn(dd, 4); // resumes the trigger left in flight
    expect(
      await dd.metric("syncmirror_triggers_total", { ...MAIN, mode: "incremental", outcome: "succeeded" }),
    ).toBe(1);
    expect(await dd.metric("syncmirror_runs_total", MAIN)).toBe(2 * x.sim.users.length);
  });

  it("counts each run once in the status it ended with when an INCOMPLETE source is continued", async () => {
    const { h: x, daemon, passOn } = await own({ defaults: { continue_incomplete: 1 } });
    const { user, server } = firstPair(x);
    x.sim.setOutcome({ user, server_instance_id: server }, { task: "INCOMPLETE", times: 1 });
    const dd = await daemon();
    await passOn(dd, 1);
    expect(await dd.metric("syncmirror_triggers_total", { ...MAIN, outcome: "succeeded" })).toBe(1);
    expect(await dd.metric("syncmirror_runs_total", { ...MAIN, status: "completed" })).toBe(
      x.sim.users.length,
    );
    expect(await dd.metric("syncmirror_runs_total", MAIN)).toBe(x.sim.users.length);
    expect(
      await dd.metric("syncmirror_api_requests_total", {
        method: "POST",
        route: "/sync-task/{sync_id}/continue",
      }),
    ).toBe(1);
  });

  it("counts the incremental in flight, then the full asked meanwhile, each in its mode", async () => {
    const { h: x, daemon, passOn } = await own();
    expect((await x.sync()).outcome).toBe("succeeded");
    const dd = await daemon();
    x.sim.runs.hold();
    expect((await x.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(() => x.query("SELECT 1 FROM triggers WHERE state = 'active'").length, "a trigger in flight");
    const full = passOn(dd, 2, { full: true });
    x.sim.runs.release();
    await full;
    for (const mode of ["incremental", "full"]) {
      expect(
        await dd.metric("syncmirror_triggers_total", { ...MAIN, mode, outcome: "succeeded" }),
        mode,
      ).toBe(1);
      expect(await dd.metric("syncmirror_sync_duration_seconds_count", { ...MAIN, mode }), mode).toBe(1);
    }
  });

  it("serves no stored gauge as 0 while it waits for the database: paused and problems absent until read", async () => {
    const { h: x, daemon } = await own();
    const { user, server } = firstPair(x);
    x.sim.setOutcome({ user, server_instance_id: server }, { task: "FAILED" });
    expect((await x.sync()).outcome).toBe("partial");
    expect((await x.cli(["pause", "--mirror", "main"])).code).toBe(0);
    let env: Record<string, string> = {};
    let release: () => Promise<void>;
    if (x.databaseUrl) {
      const proxy = await startCuttableProxy(x.databaseUrl);
      onTestFinished(() => proxy.close());
      await proxy.cut();
      env = { [DATABASE_URL_ENV]: proxy.url };
      release = () => proxy.restore();
    } else {
      const lock = openDatabase(x.dbPath, { lock: true });
      let open = true;
      const close = async () => {
        if (open) lock.close();
        open = false;
      };
      onTestFinished(close);
      release = close;
    }
    const waiting = await daemon(env, false);
    await until(
      () => /database (locked|unreachable)/.test(waiting.stderr()),
      "the daemon waiting for the database",
    );
    expect((await waiting.get("/readyz")).status).toBe(503);
    const stored = parseMetrics((await waiting.get("/metrics")).body).filter(
      (s) =>
        s.labels.mirror === "main" &&
        [
          "syncmirror_mirror_paused",
          "syncmirror_problems",
          "syncmirror_resources",
          "syncmirror_skipped_pairs",
          "syncmirror_held_revocations",
          "syncmirror_pairs_awaiting_baseline",
          "syncmirror_last_success_timestamp_seconds",
        ].includes(s.name),
    );
    expect(stored, "gauges the database holds, not read yet").toEqual([]);
    await release();
    await until(async () => (await waiting.get("/readyz")).status === 200, "/readyz 200");
    expect(await waiting.metric("syncmirror_mirror_paused", MAIN)).toBe(1);
    expect(await waiting.metric("syncmirror_problems", { ...MAIN, kind: "failed_source" })).toBe(1);
    expect(await waiting.metric("syncmirror_problems", { ...MAIN, kind: "held_sweep" })).toBe(0);
  });
});

describe("/metrics of skipped pairs, mirrors and replicas", () => {
  it("counts skipped pairs by reason, past the first 100 as unlisted, adding up to the trigger's skipped_count", async () => {
    const { h: x, daemon, passOn } = await own({ sim: { users: 61, docs: 30 } });
    const [, leaver, ...unauthenticated] = x.sim.users;
    if (!leaver) throw new Error("no users");
    const explicit = x.sim.configs.create({ userEmails: x.sim.users });
    editConfig(x, (c) => {
      c.mirrors = [{ name: "main", sync_config_id: explicit }];
    });
    for (const u of unauthenticated)
      for (const s of x.sim.servers) x.sim.people.setAuth(u, s.server_instance_id, "not_authenticated");
    x.sim.people.leaveProject(leaver);
    const dd = await daemon();
    await passOn(dd, 1);
    const text = (await dd.get("/metrics")).body;
    const byReason = Object.fromEntries(
      parseMetrics(text)
        .filter((s) => s.name === "syncmirror_skipped_pairs")
        .map((s) => [s.labels.reason, s.value]),
    );
    const skipped = x.sim.servers.length * (unauthenticated.length + 1);
    expect(x.query("SELECT skipped_count FROM triggers")).toEqual([{ skipped_count: skipped }]);
    expect(byReason).toEqual({
      not_a_project_user: x.sim.servers.length,
      not_accessible: 100 - x.sim.servers.length,
      not_syncable: 0,
      unlisted: skipped - 100,
    });
    for (const u of x.sim.users) expect(text).not.toContain(u);
  });

  it("counts in syncmirror_resources what each mirror sees: a revocation in one leaves the other's count", async () => {
    const { h: x, daemon, passOn } = await own({ sim: { users: 3, docs: 30 } });
    const [u1, u2, u3] = x.sim.users as [string, string, string];
    const mainConfig = x.sim.configs.create({ userEmails: [u2, u3] });
    const otherConfig = x.sim.configs.create({ userEmails: [u1] });
    editConfig(x, (c) => {
      c.mirrors = [
        { name: "main", sync_config_id: mainConfig },
        { name: "other", sync_config_id: otherConfig },
      ];
    });
    const [doc] = x.sim.docs.list();
    if (!doc) throw new Error("no document");
    x.sim.docs.setVisibility(doc.docId, [u1, u2]);
    const dd = await daemon();
    const OTHER = { mirror: "other" };
    await passOn(dd, 1, { full: true });
    await passOn(dd, 1, { mirror: "other", full: true });
    const main0 = await dd.metric("syncmirror_resources", MAIN);
    const other0 = await dd.metric("syncmirror_resources", OTHER);
    expect(main0).toBe(liveKeysOf(x, "main"));
    expect(other0).toBe(liveKeysOf(x, "other"));

    x.sim.docs.setVisibility(doc.docId, [u1]);
    await passOn(dd, 2, { full: true });
    expect(await dd.metric("syncmirror_resources", MAIN)).toBe(main0 - 1);
    expect(await dd.metric("syncmirror_access_revoked_total", MAIN)).toBe(1);
    expect(await dd.metric("syncmirror_resources_deleted_total", MAIN)).toBe(0);
    expect(await dd.metric("syncmirror_resources", OTHER)).toBe(other0);

    x.sim.docs.setVisibility(doc.docId, []);
    await passOn(dd, 2, { mirror: "other", full: true });
    expect(await dd.metric("syncmirror_resources", OTHER)).toBe(other0 - 1);
    expect(await dd.metric("syncmirror_resources_deleted_total", OTHER)).toBe(1);
    expect(await dd.metric("syncmirror_resources", MAIN)).toBe(liveKeysOf(x, "main"));
  });

  it.runIf(onPostgres)(
    "serves the same gauges on two replicas, whichever ran the pass, and counts it once",
    async () => {
      const { h: x, daemon, passOn } = await own();
      const { user, server } = firstPair(x);
      const a = await daemon();
      const b = await daemon();
      await passOn(a, 1);
      x.sim.people.setAuth(user, server, "not_authenticated");
      await passOn(b, 2);
      const github = x.sim.servers.find((s) => s.source_type === "github")?.server_instance_id;
      for (const doc of x.sim.docs.list())
        if (doc.server_instance_id === github && !doc.deleted) x.sim.docs.remove(doc.docId);
      await passOn(a, 3, { full: true });
      const gauges = [
        ["syncmirror_resources", MAIN],
        ["syncmirror_skipped_pairs", { ...MAIN, reason: "not_accessible" }],
        ["syncmirror_held_revocations", MAIN],
        ["syncmirror_pairs_awaiting_baseline", MAIN],
        ["syncmirror_problems", MAIN],
        ["syncmirror_last_success_timestamp_seconds", { ...MAIN, mode: "full" }],
        ["syncmirror_last_success_timestamp_seconds", { ...MAIN, mode: "incremental" }],
      ] as const;
      for (const [name, labels] of gauges)
        await until(
          async () => (await a.metric(name, labels)) === (await b.metric(name, labels)),
          `${name} the same on both replicas`,
        );
      expect(await b.metric("syncmirror_resources", MAIN)).toBe(liveKeysOf(x, "main"));
      expect(await b.metric("syncmirror_skipped_pairs", { ...MAIN, reason: "not_accessible" })).toBe(1);
      expect(await b.metric("syncmirror_held_revocations", MAIN)).toBeGreaterThan(0);
    },
  );
});

function liveKeysOf(x: Harness, mirror: string): number | undefined {
  return x.query<{ n: number }>(
    `SELECT count(DISTINCT a.key) AS n FROM resource_access a JOIN resources r ON r.key = a.key
     WHERE a.mirror = ? AND r.deleted_at IS NULL`,
    mirror,
  )[0]?.n;
}
