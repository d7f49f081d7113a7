/**
 * docs/reference/sync-semantics.md#one-trigger-per-mirror and the polling settings
 * (`poll_initial_seconds`, `poll_max_seconds`, `run_timeout_minutes`, `continue_incomplete`,
 * `continue_message`): how a pass waits for its runs, continues INCOMPLETE sources and gives up.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { SyncContext } from "../../../src/sync/context.js";
import { accessRows, pairOf, pairs, pickDocs, runCreatedAtMs } from "../../helpers/mirror-db.js";
import { createHarness, type Harness, visibleKeys } from "../../helpers/mirror-harness.js";
import { answered, triggerPosts } from "../../helpers/requests.js";
import { proxiedHarness } from "../../helpers/rewriting-proxy.js";
import { createTestApi } from "../../helpers/simulator.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const U1 = "user1@example.com";
const U2 = "user2@example.com";
const U3 = "user3@example.com";
const CONTINUE = "POST /sync-task/{sync_id}/continue";
const RUN_LIST = "GET /sync-task";

const serverOf = (x: Harness, type: "notion" | "github") =>
  x.sim.servers.find((s) => s.source_type === type)?.server_instance_id ?? "";

const runOf = (x: Harness, user: string) => {
  const run = x.sim.runs.list().find((r) => r.user_email === user);
  if (!run) throw new Error(`no run of ${user}`);
  return run;
};

/** The continue messages a source received, as its transcript shows them. */
async function continuesReceived(x: Harness, syncId: string, source: string): Promise<string[]> {
  const { body } = await createTestApi(x.sim).get(`/sync-task/${syncId}/transcript`, { source, limit: 100 });
  const userTexts = body.messages
    .filter((m: { role: string; message_type: string }) => m.role === "user" && m.message_type === "text")
    .map((m: { content: string }) => m.content);
  // The first user message is the sync config's instructions.
  return userTexts.slice(1);
}

/** A clock of the test's for the pass: each poll sleep is recorded and moves it on at once. */
function testClock(onSleep: (sleeps: number[]) => void = () => {}) {
  let offsetMs = 0;
  const sleeps: number[] = [];
  const seams: Pick<SyncContext, "now" | "sleep"> = {
    now: () => new Date(Date.now() + offsetMs),
    sleep: async (ms) => {
      sleeps.push(ms);
      offsetMs += ms;
      onSleep(sleeps);
      await new Promise((resolve) => setImmediate(resolve));
    },
  };
  return { sleeps, seams };
}

describe("polling backoff", () => {
  it("waits poll_initial_seconds first, then longer, never more than poll_max_seconds", async () => {
    h = await createHarness({
      sim: { docs: 10, lifecycle: "manual" },
      defaults: { poll_initial_seconds: 0.5, poll_max_seconds: 4 },
    });
    const sim = h.sim;
    const clock = testClock((sleeps) => {
      if (sleeps.length === 8) sim.runs.finishAll();
    });

    const summary = await h.sync({}, clock.seams);

    expect(summary.outcome).toBe("succeeded");
    expect(clock.sleeps[0]).toBe(500);
    for (let i = 1; i < clock.sleeps.length; i++)
      expect(clock.sleeps[i]).toBeGreaterThanOrEqual(clock.sleeps[i - 1] ?? 0);
    expect(Math.max(...clock.sleeps)).toBe(4000);
    expect(clock.sleeps.filter((ms) => ms === 4000).length).toBeGreaterThan(1);
    // One listing per wait, and one before the first.
    expect(answered(h, RUN_LIST)).toBe(clock.sleeps.length + 1);
  });
});

describe("run_timeout_minutes", () => {
  it("gives up on a run that never finishes: the others are ingested, partial, and the next pass triggers anew", async () => {
    h = await createHarness({
      sim: { docs: 20, lifecycle: "manual" },
      defaults: { run_timeout_minutes: 1, poll_initial_seconds: 5, poll_max_seconds: 20 },
    });
    const sim = h.sim;
    const clock = testClock();
    const finishRunsOf = (users: string[]) => (point: string) => {
      if (point !== "after-trigger-post") return;
      for (const run of sim.runs.list().filter((r) => users.includes(r.user_email))) {
        sim.runs.advance(run.sync_id);
        sim.runs.advance(run.sync_id);
      }
    };

    const summary = await h.sync({}, { ...clock.seams, crashPoint: finishRunsOf([U1, U2]) });

    expect(summary.outcome).toBe("partial");
    expect(summary.errors).toEqual([
      expect.objectContaining({ user_email: U3, error: "run_timeout_minutes reached" }),
    ]);
    expect(clock.sleeps.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(60_000);
    const moved = pairs(h).filter((p) => p.watermark !== null);
    expect(new Set(moved.map((p) => p.user_email))).toEqual(new Set([U1, U2]));
    expect(pairs(h).filter((p) => p.user_email === U3 && p.watermark !== null)).toEqual([]);
    expect(visibleKeys(h, U3)).toEqual([]);
    expect(visibleKeys(h, U1).length).toBeGreaterThan(0);
    const abandoned = runOf(h, U3).sync_id;

    // The trigger was closed: the next pass sends a new one and never reads the abandoned run's export.
    sim.runs.finishAll();
    const next = await h.sync({}, { ...testClock().seams, crashPoint: finishRunsOf([U1, U2, U3]) });
    expect(next.resumed).toBe(false);
    expect(next.trigger_id).not.toBe(summary.trigger_id);
    expect(triggerPosts(h)).toBe(2);
    expect(sim.requests.filter((r) => r.path.includes(`/${abandoned}/export`))).toEqual([]);
    expect(next.outcome).toBe("succeeded");
  });

  it("ends failed when no run finishes: exit 1, and the next sync triggers anew", async () => {
    h = await createHarness({
      sim: { docs: 10, lifecycle: "manual" },
      defaults: { run_timeout_minutes: 0.002 },
    });

    const first = await h.cli(["sync", "--json"]);
    expect(first.code, first.stderr).toBe(1);
    const summary = JSON.parse(first.stdout).mirrors[0];
    expect(summary.outcome).toBe("failed");
    expect(summary.message).toMatch(/run_timeout_minutes/);
    expect(pairs(h).filter((p) => p.watermark !== null)).toEqual([]);

    const second = await h.cli(["sync", "--json"]);
    expect(second.code).toBe(1);
    expect(JSON.parse(second.stdout).mirrors[0]).toMatchObject({ outcome: "failed", resumed: false });
    expect(triggerPosts(h)).toBe(2);
  });
});

describe("continue_incomplete", () => {
  it("sends each INCOMPLETE source at most N continues, with continue_message and its source label", async () => {
    const message = "Please keep going: the audit needs everything.";
    h = await createHarness({
      sim: { docs: 30 },
      defaults: { continue_incomplete: 2, continue_message: message, since_overlap_seconds: 0 },
    });
    const notion = serverOf(h, "notion");
    const github = serverOf(h, "github");
    // notion completes after one continue; github is still INCOMPLETE after two.
    h.sim.setOutcome({ user: U1, server_instance_id: notion }, { task: "INCOMPLETE", times: 1 });
    h.sim.setOutcome({ user: U1, server_instance_id: github }, { task: "INCOMPLETE", times: 3 });

    const summary = await h.sync();

    expect(summary.outcome).toBe("partial");
    const run = runOf(h, U1);
    expect(await continuesReceived(h, run.sync_id, "notion")).toEqual([message]);
    expect(await continuesReceived(h, run.sync_id, "github")).toEqual([message, message]);
    expect(answered(h, CONTINUE)).toBe(3);
    expect(answered(h, CONTINUE, 200)).toBe(3);
    // Nobody else's run was continued.
    for (const user of [U2, U3]) {
      const other = runOf(h, user);
      for (const source of ["notion", "github"])
        expect(await continuesReceived(h, other.sync_id, source)).toEqual([]);
    }
    // The continued source that completed succeeds; the one that stayed INCOMPLETE does not.
    expect(Date.parse(pairOf(h, U1, notion)?.watermark ?? "")).toBe(runCreatedAtMs(h, summary.trigger_id));
    expect(pairOf(h, U1, github)?.watermark).toBeNull();
  });

  it("sends none with continue_incomplete 0: the INCOMPLETE source's pair does not advance", async () => {
    h = await createHarness({ sim: { docs: 30 } });
    const notion = serverOf(h, "notion");
    h.sim.setOutcome({ user: U1, server_instance_id: notion }, { task: "INCOMPLETE", times: 1 });

    const summary = await h.sync();

    expect(summary.outcome).toBe("partial");
    expect(answered(h, CONTINUE)).toBe(0);
    expect(pairOf(h, U1, notion)?.watermark).toBeNull();
  });

  it("never continues a FAILED source, in a run with an INCOMPLETE one or alone", async () => {
    h = await createHarness({ sim: { docs: 30 }, defaults: { continue_incomplete: 2 } });
    const notion = serverOf(h, "notion");
    const github = serverOf(h, "github");
    h.sim.setOutcome({ user: U1, server_instance_id: notion }, { task: "FAILED" });
    h.sim.setOutcome({ user: U1, server_instance_id: github }, { task: "INCOMPLETE", times: 1 });
    h.sim.setOutcome({ user: U2, server_instance_id: github }, { task: "FAILED" });

    const summary = await h.sync();

    expect(summary.outcome).toBe("partial");
    expect(answered(h, CONTINUE)).toBe(1);
    const u1 = runOf(h, U1).sync_id;
    expect(await continuesReceived(h, u1, "notion")).toEqual([]);
    expect(await continuesReceived(h, u1, "github")).toHaveLength(1);
    expect(await continuesReceived(h, runOf(h, U2).sync_id, "github")).toEqual([]);
    expect(pairOf(h, U1, github)?.watermark).not.toBeNull();
    expect(pairOf(h, U1, notion)?.watermark).toBeNull();
    expect(pairOf(h, U2, github)?.watermark).toBeNull();
  });

  it("takes a 409 to a continue in its stride: the pass goes on and the source that was continued succeeds", async () => {
    const proxied = await proxiedHarness({ sim: { docs: 30 }, defaults: { continue_incomplete: 1 } });
    h = proxied.h;
    const notion = serverOf(h, "notion");
    const github = serverOf(h, "github");
    h.sim.setOutcome({ user: U1, server_instance_id: notion }, { task: "FAILED" });
    h.sim.setOutcome({ user: U1, server_instance_id: github }, { task: "INCOMPLETE", times: 1 });
    // The run detail shows the FAILED source as INCOMPLETE, as a detail read just before it failed
    // would: the service then refuses its continue (409, the source failed).
    proxied.proxy.runDetail = (body) => {
      const run = JSON.parse(body);
      for (const s of run.sources) if (s.status === "FAILED") s.status = "INCOMPLETE";
      return JSON.stringify(run);
    };

    const summary = await h.sync();

    expect(answered(h, CONTINUE, 409)).toBe(1);
    expect(answered(h, CONTINUE, 200)).toBe(1);
    expect(summary.outcome).toBe("partial");
    expect(pairOf(h, U1, github)?.watermark).not.toBeNull();
    expect(pairOf(h, U1, notion)?.watermark).toBeNull();
    for (const user of [U2, U3]) expect(visibleKeys(h, user).length).toBeGreaterThan(0);
  });
});

describe("a continue the service does not take", () => {
  it("for a run gone upstream (404): that run fails alone, the others are ingested, partial", async () => {
    const proxied = await proxiedHarness({ sim: { docs: 30 }, defaults: { continue_incomplete: 1 } });
    h = proxied.h;
    const sim = h.sim;
    const notion = serverOf(h, "notion");
    sim.setOutcome({ user: U1, server_instance_id: notion }, { task: "INCOMPLETE", times: 1 });
    // The run is deleted upstream right after the detail read that precedes its continue.
    proxied.proxy.runDetail = (body) => {
      const run = JSON.parse(body);
      if (run.status === "incomplete") sim.runs.remove(run.sync_id);
      return body;
    };

    const summary = await h.sync();

    expect(answered(h, CONTINUE, 404)).toBe(1);
    expect(summary.outcome).toBe("partial");
    expect(summary.errors).toEqual([
      expect.objectContaining({ user_email: U1, error: expect.stringMatching(/no longer exists upstream/) }),
    ]);
    expect(pairs(h).filter((p) => p.user_email === U1 && p.watermark !== null)).toEqual([]);
    for (const user of [U2, U3]) expect(visibleKeys(h, user).length).toBeGreaterThan(0);
    // Nothing is left in flight: the next pass is a trigger of its own.
    const next = await h.sync();
    expect(next).toMatchObject({ resumed: false, outcome: "succeeded" });
    expect(triggerPosts(h)).toBe(2);
  });

  it("answered 503 on every attempt: the run is exported as it is, partial, nothing left in flight", async () => {
    h = await createHarness({ sim: { docs: 30 }, defaults: { continue_incomplete: 1 }, maxAttempts: 2 });
    const notion = serverOf(h, "notion");
    const github = serverOf(h, "github");
    h.sim.setOutcome({ user: U1, server_instance_id: notion }, { task: "INCOMPLETE", times: 1 });
    h.sim.faults.inject(CONTINUE, { kind: "503", retryAfterSeconds: 0, times: Number.POSITIVE_INFINITY });

    const summary = await h.sync();

    expect(answered(h, CONTINUE, 503)).toBe(2);
    expect(summary.outcome).toBe("partial");
    // U1's run is read as it finished: its complete source succeeds, the INCOMPLETE one does not.
    expect(pairOf(h, U1, github)?.watermark).not.toBeNull();
    expect(pairOf(h, U1, notion)?.watermark).toBeNull();
    for (const user of [U2, U3]) expect(visibleKeys(h, user).length).toBeGreaterThan(0);
    const next = await h.sync();
    expect(next.resumed).toBe(false);
    expect(triggerPosts(h)).toBe(2);
  });
});

describe("export status no_results", () => {
  it("counts as success: the pair's watermark moves and a full snapshot sweeps what it no longer holds", async () => {
    h = await createHarness({ sim: { docs: 12 } });
    await h.sync();
    const notion = serverOf(h, "notion");
    const held = accessRows(h).filter((a) => a.user_email === U1 && a.key.includes(notion));
    expect(held.length).toBeGreaterThan(0);
    // Every notion document U1 sees disappears: U1's notion source now includes nothing.
    const gone = pickDocs(h, held.length, (d) => d.server_instance_id === notion && d.visibleTo.includes(U1));
    for (const doc of gone) h.sim.docs.remove(doc.docId);

    const full = await h.sync({ full: true });

    expect(full.outcome).toBe("succeeded");
    expect(full.sources.no_results).toBeGreaterThan(0);
    expect(Date.parse(pairOf(h, U1, notion)?.watermark ?? "")).toBe(runCreatedAtMs(h, full.trigger_id));
    expect(accessRows(h).filter((a) => a.user_email === U1 && a.key.includes(notion))).toEqual([]);
  });
});
