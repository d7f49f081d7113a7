/**
 * What a running daemon shows: `/status` is `status --json`'s object and matches the database and
 * the simulator; no endpoint, stdout or stderr carries the token or document content; logs are
 * JSON lines that name the mirror and the trigger.
 */
import { describe, expect, it } from "vitest";
import type { MirrorStatus } from "../../../src/sync/status-report.js";
import { type DaemonProcess, parseLogLines, until } from "../../helpers/daemon.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { daemonSuite, EVERY_SECOND, NEVER } from "./setup.js";

const suite = daemonSuite();
const daemon = suite.daemon;

async function httpStatus(d: DaemonProcess): Promise<MirrorStatus> {
  const res = await d.get("/status");
  expect(res.status).toBe(200);
  return (JSON.parse(res.body) as { mirrors: MirrorStatus[] }).mirrors[0] as MirrorStatus;
}

async function cliStatus(harness: Harness): Promise<unknown> {
  const { code, stdout } = await harness.cli(["status", "--json"]);
  expect(code).toBe(0);
  return steady(JSON.parse(stdout));
}

/**
 * A status without what moves by itself between two reads a moment apart: the next scheduled times
 * (every second here), the pass due (a tick may coalesce meanwhile) and the heartbeats.
 */
function steady(status: {
  mirrors: Record<string, unknown>[];
  replicas: Record<string, unknown>[];
}): unknown {
  return {
    mirrors: status.mirrors.map(({ next_incremental_at, next_full_at, due, ...rest }) => ({
      ...rest,
      next_incremental_at: typeof next_incremental_at,
      next_full_at: typeof next_full_at,
    })),
    replicas: status.replicas.map((r) => r.instance_id),
  };
}

/** The newest trigger the simulator received, with its runs. */
function newestTrigger(harness: Harness): { triggerId: string; syncIds: string[] } {
  const runs = harness.sim.runs.list();
  const triggerId = runs[0]?.trigger_id;
  if (!triggerId) throw new Error("the simulator has no run");
  const syncIds = runs.filter((r) => r.trigger_id === triggerId).map((r) => r.sync_id);
  return { triggerId, syncIds: syncIds.sort() };
}

/** A daemon with a 1-second incremental cron, once its first pass has succeeded. */
async function daemonAfterOnePass(): Promise<{ h: Harness; d: DaemonProcess }> {
  const h = suite.use(
    await createHarness({ defaults: { incremental_cron: EVERY_SECOND, full_cron: NEVER } }),
  );
  const d = await daemon(h);
  await until(
    async () => (await d.metric("syncmirror_triggers_total", { mirror: "main", outcome: "succeeded" })) >= 1,
    "a succeeded pass",
  );
  return { h, d };
}

describe("syncmirror run: /status, secrets, logs", () => {
  it("serves status --json's object at /status, both matching the trigger in flight and the database", async () => {
    const h = suite.use(
      await createHarness({ defaults: { incremental_cron: EVERY_SECOND, full_cron: NEVER } }),
    );
    const harness = h;
    h.sim.runs.hold();
    const d = await daemon(h);
    const held = await until(async () => {
      const s = await httpStatus(d);
      return s.in_flight && s.in_flight.runs.length === harness.sim.users.length ? s : undefined;
    }, "the held trigger and its runs in /status");
    const sent = newestTrigger(h);
    expect(held.in_flight).toMatchObject({ trigger_id: sent.triggerId, mode: "full", since: null });
    expect(held.in_flight?.runs.map((r) => r.sync_id).sort()).toEqual(sent.syncIds);
    expect(held).toMatchObject({ last_full_success_at: null, live_resources: 0, next_mode: "full" });
    expect(await cliStatus(h)).toEqual(steady(JSON.parse((await d.get("/status")).body)));

    // Let the full finish, then freeze the next incremental: a state that holds still.
    h.sim.runs.release();
    await until(async () => (await httpStatus(d)).last_full_success_at, "the full pass to succeed");
    h.sim.runs.hold();
    const next = await until(async () => {
      const s = await httpStatus(d);
      return s.in_flight?.mode === "incremental" && s.in_flight.runs.length > 0 ? s : undefined;
    }, "an incremental trigger in flight");
    const live = h.query<{ n: number }>(
      `SELECT count(DISTINCT a.key) AS n FROM resource_access a JOIN resources r ON r.key = a.key
       WHERE a.mirror = 'main' AND r.deleted_at IS NULL`,
    )[0]?.n;
    expect(next).toMatchObject({ live_resources: live, last_outcome: "succeeded", next_mode: "incremental" });
    expect(next.in_flight?.trigger_id).toBe(newestTrigger(h).triggerId);
    expect(next.in_flight?.since).not.toBeNull();
    expect(await cliStatus(h)).toEqual(steady(JSON.parse((await d.get("/status")).body)));
    h.sim.runs.release();
    expect((await d.stop()).code).toBe(0);
  });

  it("never shows the token or document content over HTTP, on stdout or on stderr", async () => {
    const { h, d } = await daemonAfterOnePass();
    const bodies = await Promise.all(
      ["/metrics", "/status", "/healthz", "/readyz", "/nope"].map((p) => d.get(p)),
    );
    expect(bodies.map((b) => b.status)).toEqual([200, 200, 200, 200, 404]);
    const post = await fetch(`http://127.0.0.1:${d.port}/status`, { method: "POST" });
    expect(post.status).toBe(405);
    const stopped = await d.stop();
    expect(stopped.code).toBe(0);
    const texts = [...bodies.map((b) => b.body), d.stdout(), d.stderr()];
    const samples = h.query<{ title: string; content_text: string }>(
      "SELECT title, content_text FROM resources WHERE content_text IS NOT NULL LIMIT 20",
    );
    expect(samples.length).toBeGreaterThan(0);
    for (const text of texts) {
      expect(text).not.toContain(h.sim.token);
      for (const s of samples) {
        expect(text).not.toContain(s.content_text.slice(0, 40));
        expect(text).not.toContain(s.title);
      }
    }
  });

  it("logs JSON lines on stderr that name the mirror and the trigger", async () => {
    const { h, d } = await daemonAfterOnePass();
    const { triggerId } = newestTrigger(h);
    expect((await d.stop()).code).toBe(0);
    const logs = parseLogLines(d.stderr()); // throws on a line that is not JSON
    expect(d.stdout()).toBe("");
    const tagged = logs.filter((l) => l.mirror === "main" && typeof l.trigger_id === "string");
    expect(tagged.length).toBeGreaterThan(0);
    expect(logs.some((l) => l.mirror === "main" && l.trigger_id === triggerId)).toBe(true);
    for (const l of logs) expect(l).toMatchObject({ level: expect.any(Number), time: expect.any(String) });
    expect(logs.at(-1)?.msg).toBe("daemon stopped");
  });
});
