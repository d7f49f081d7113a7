/**
 * The daemon across kill -9 and SIGTERM / SIGINT (docs/scaling-out.md#scheduling,
 * docs/operations.md#restarts): with one slot a due pass waits for it and stays due through a
 * crash; the restarted daemon resumes the trigger left in flight (no second POST) before anything
 * due, catches up the times that fell while nothing ran once, and runs a full asked for while an
 * incremental ran after it; a trigger whose POST answer was lost is adopted; a stop never waits out
 * a Retry-After or a stalled answer (second-signal.test.ts: a signal during the drain). SQLite only: the
 * scheduler is the same on both stores, and replicas/ covers a killed replica on PostgreSQL.
 */
import { describe, expect, it } from "vitest";
import { until } from "../../helpers/daemon.js";
import { createHarness, expectedKeys, visibleKeys } from "../../helpers/mirror-harness.js";
import { useMirrors } from "../../helpers/replicas.js";
import { answered, triggerPosts } from "../../helpers/requests.js";
import { daemonSuite, editConfig, NEVER, setCrons, twoTimesSoon } from "../daemon/setup.js";

const suite = daemonSuite();
const TRIGGER = "POST /sync-task";
const EXPORT = "GET /sync-task/{sync_id}/export";

interface TriggerRow {
  mirror: string;
  mode: string;
  state: string;
  intent_at: string;
  finished_at: string | null;
}

describe("the schedule across a kill -9, one slot", () => {
  it("resumes the trigger in flight first, then each due pass once, one at a time; SIGINT exits 0", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    const [m1, m2] = useMirrors(h, 2);
    editConfig(h, (config) => {
      config.max_concurrent_mirrors = 1;
    });
    const triggers = () =>
      h.query<TriggerRow>(
        "SELECT mirror, mode, state, intent_at, finished_at FROM triggers WHERE due_reason IS NOT NULL ORDER BY id",
      );
    const due = () =>
      Object.fromEntries(
        h
          .query<{ mirror: string; due_mode: string | null }>("SELECT mirror, due_mode FROM schedules")
          .map((s) => [s.mirror, s.due_mode]),
      );

    expect((await h.cli(["sync"])).code, "a baseline: the next passes are incremental").toBe(0);
    const baseline = triggerPosts(h);
    h.sim.runs.hold();
    const first = await suite.daemon(h);
    expect((await h.cli(["trigger", "--mirror", `${m1}`])).code).toBe(0);
    await until(() => triggerPosts(h) === baseline + 1, "the first mirror's trigger POST");
    expect((await h.cli(["trigger", "--mirror", `${m2}`])).code).toBe(0);
    expect((await h.cli(["trigger", "--mirror", `${m1}`, "--full"])).code).toBe(0);
    expect(due()).toEqual({ [`${m1}`]: "full", [`${m2}`]: "incremental" });
    first.child.kill("SIGKILL");
    await first.exited;
    expect(triggers()).toMatchObject([{ mirror: m1, mode: "incremental", state: "active" }]);

    // Both times fall while no process runs: each mirror owes one catch-up, covered by what is due.
    const soon = twoTimesSoon();
    setCrons(h, { incremental_cron: soon.cron, full_cron: NEVER });
    await until(() => Date.now() > soon.last.getTime() + 200, "both incremental_cron times to pass", 20_000);

    const second = await suite.daemon(h);
    await until(
      () => second.logs().some((l) => l.msg === "daemon started"),
      "the restarted daemon's first look",
    );
    expect(triggerPosts(h), "the only slot resumes the trigger left in flight").toBe(baseline + 1);
    expect(due()).toMatchObject({ [`${m1}`]: "full", [`${m2}`]: "incremental" });
    expect(
      await second.metric("syncmirror_ticks_skipped_total", { mirror: `${m2}`, reason: "waiting" }),
      "the two missed times, caught up once, found a pass already due",
    ).toBe(1);

    h.sim.runs.release();
    await until(() => triggers().filter((t) => t.state === "done").length === 3, "three passes done");
    const rows = triggers();
    expect(rows.map((t) => `${t.mirror} ${t.mode}`).sort()).toEqual(
      [`${m1} incremental`, `${m1} full`, `${m2} incremental`].sort(),
    );
    expect(rows[0]).toMatchObject({ mirror: m1, mode: "incremental" });
    for (let i = 1; i < rows.length; i++)
      expect(
        Date.parse(rows[i]?.intent_at ?? "") >= Date.parse(rows[i - 1]?.finished_at ?? ""),
        "one slot: a pass starts after the previous one finished",
      ).toBe(true);
    expect(triggerPosts(h) - baseline, "one POST per pass, none for the resumed trigger").toBe(3);
    expect(due(), "nothing left due").toEqual({ [`${m1}`]: null, [`${m2}`]: null });

    const stopped = await second.stop("SIGINT");
    expect(stopped).toMatchObject({ code: 0, signal: null });
    expect(stopped.ms).toBeLessThan(10_000);
  });
});

describe("SIGTERM while a request waits out a Retry-After", () => {
  it("exits 0 within 10 s though the service asked for a minute; the next start triggers once", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    h.sim.faults.inject(TRIGGER, { kind: "429", retryAfterSeconds: 60 });
    const first = await suite.daemon(h);
    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(() => answered(h, TRIGGER, 429) === 1, "the trigger POST refused with a Retry-After");
    const stopped = await first.stop();
    expect(stopped).toMatchObject({ code: 0, signal: null });
    expect(stopped.ms).toBeLessThan(10_000);
    expect(triggerPosts(h), "the wait was not cut short by a second POST").toBe(1);

    const second = await suite.daemon(h);
    await until(
      () => h.query("SELECT 1 FROM triggers WHERE state = 'done'").length,
      "the pass the stop interrupted, resumed",
    );
    expect(new Set(h.sim.runs.list().map((r) => r.trigger_id)).size, "one trigger upstream").toBe(1);
    expect(h.query("SELECT state FROM triggers")).toEqual([{ state: "done" }]);
    expect((await second.stop()).code).toBe(0);
  });
});

describe("a trigger whose POST answer a kill -9 lost", () => {
  it("is adopted by the daemon at start from the run list, not POSTed again, and ingested", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    const crashed = await h.cli(["sync"], { SYNCMIRROR_CRASH_AT: "after-trigger-post:1" });
    expect(crashed.code, crashed.stderr).toBeNull();
    expect(h.query("SELECT state, trigger_id FROM triggers")).toEqual([
      { state: "intent", trigger_id: null },
    ]);

    const d = await suite.daemon(h);
    await until(
      () => h.query("SELECT 1 FROM triggers WHERE state = 'done'").length,
      "the adopted trigger done",
    );
    expect(triggerPosts(h)).toBe(1);
    const [upstream] = new Set(h.sim.runs.list().map((r) => r.trigger_id));
    expect(h.query("SELECT trigger_id FROM triggers")).toEqual([{ trigger_id: upstream }]);
    for (const user of h.sim.users) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
    expect((await d.stop()).code).toBe(0);
  });
});

describe("SIGTERM while an export page takes a minute to answer", () => {
  it("exits 0 within 10 s, not waiting for the answer; the page before it stays committed", async () => {
    const h = suite.use(
      await createHarness({
        sim: { users: 1, docs: 1100, serversPerType: { notion: 1 } },
        defaults: { incremental_cron: NEVER, full_cron: NEVER },
        api: { timeout_seconds: 120 },
        export: { pages_ahead_per_run: 0 },
      }),
    );
    h.sim.faults.inject(EXPORT, { kind: "delay", ms: 0 });
    h.sim.faults.inject(EXPORT, { kind: "delay", ms: 60_000, times: Number.POSITIVE_INFINITY });
    const first = await suite.daemon(h);
    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(() => h.query("SELECT 1 FROM resources LIMIT 1").length, "the first page committed");
    await until(() => answered(h, EXPORT) >= 2, "the second page asked for");
    const stopped = await first.stop();
    expect(stopped).toMatchObject({ code: 0, signal: null });
    expect(stopped.ms).toBeLessThan(10_000);
    const [run] = h.query<{ ingest: string; next_offset: number }>("SELECT ingest, next_offset FROM runs");
    expect(run?.ingest).toBe("ingesting");
    expect(h.query("SELECT count(*) AS n FROM resources"), "the first page, all of it, only it").toEqual([
      { n: run?.next_offset },
    ]);
  });
});
