/**
 * `syncmirror run`'s schedule and the operator's controls through real processes (docs/scaling-out.md#scheduling, docs/console-history.md): ticks falling while a pass runs coalesce into one due pass; a
 * daemon down across its full_cron runs that full once at start (SQLite and PostgreSQL); pause,
 * resume and trigger from the CLI and over HTTP, who gave them recorded; trigger with no daemon
 * runs the pass itself.
 */
import { hostname, userInfo } from "node:os";
import { describe, expect, it } from "vitest";
import { until } from "../../helpers/daemon.js";
import { TEST_DIALECT, type TestDialect } from "../../helpers/dialect.js";
import { createHarness, type Harness, TOKEN_ENV } from "../../helpers/mirror-harness.js";
import { triggerPosts } from "../../helpers/requests.js";
import { daemonSuite, EVERY_SECOND, editConfig, NEVER, setCrons, twoTimesSoon } from "./setup.js";

const suite = daemonSuite();
const HTTP_TOKEN = "controls-bearer-51c0";
// Each test project runs this file on its own store (the postgres project too), so the cases that
// name their store take the project's: both are covered once each wherever PostgreSQL answers.
const dialects: TestDialect[] = [TEST_DIALECT];

interface TriggerRow {
  id: number;
  mode: string;
  state: string;
  due_at: string | null;
  due_reason: string | null;
  started_by_name: string | null;
  intent_at: string;
}

const triggers = (h: Harness) =>
  h.query<TriggerRow>(
    "SELECT id, mode, state, due_at, due_reason, started_by_name, intent_at FROM triggers ORDER BY id",
  );
const schedule = (h: Harness) =>
  h.query<{
    due_mode: string | null;
    due_at: string | null;
    due_reason: string | null;
    paused_by: string | null;
  }>("SELECT due_mode, due_at, due_reason, paused_by FROM schedules WHERE mirror = 'main'")[0];

describe("syncmirror run: scheduling", () => {
  it("coalesces the ticks falling while its pass runs into one due pass, run once after it", async () => {
    const h = suite.use(
      await createHarness({ defaults: { incremental_cron: EVERY_SECOND, full_cron: NEVER } }),
    );
    h.sim.runs.hold();
    const first = await suite.daemon(h);
    await until(
      async () => (await first.metric("syncmirror_ticks_skipped_total", { reason: "in_flight" })) >= 3,
      "three more ticks while the pass runs",
    );
    expect(triggers(h)).toHaveLength(1);
    const due = schedule(h);
    expect(due, "one due pass for all of them").toMatchObject({
      due_mode: "incremental",
      due_reason: "schedule",
    });
    expect((await first.stop()).code).toBe(0);

    setCrons(h, { incremental_cron: NEVER, full_cron: NEVER });
    const second = await suite.daemon(h);
    h.sim.runs.release();
    await until(
      () => triggers(h).filter((t) => t.state === "done").length === 2,
      "the resumed and the due pass",
    );
    const [resumed, coalesced] = triggers(h);
    expect(resumed?.due_reason).toBe("schedule");
    expect(coalesced).toMatchObject({ due_reason: "schedule", due_at: due?.due_at });
    expect(schedule(h)?.due_mode, "nothing more is due").toBeNull();
    expect(triggerPosts(h)).toBe(2);
    expect((await second.stop()).code).toBe(0);
  });

  it.each(dialects)(
    "runs at start, once, the latest full_cron time that fell while it was down (%s)",
    async (dialect) => {
      const h = suite.use(
        await createHarness({ dialect, defaults: { incremental_cron: NEVER, full_cron: NEVER } }),
      );
      const before = await suite.daemon(h);
      await until(() => h.query("SELECT 1 FROM schedules").length, "the schedule recorded");
      expect((await before.stop()).code).toBe(0);
      // Set once the daemon is down, so however slowly it started and stopped, both times fall while no process runs.
      const soon = twoTimesSoon();
      setCrons(h, { incremental_cron: NEVER, full_cron: soon.cron });
      await until(() => Date.now() > soon.last.getTime() + 200, "both full_cron times to pass", 20_000);
      expect(triggers(h), "nothing ran while the daemon was down").toEqual([]);

      const after = await suite.daemon(h);
      await until(() => triggers(h).some((t) => t.state === "done"), "the caught-up full pass");
      const [full, ...more] = triggers(h);
      expect(more, "once, not once per missed time").toEqual([]);
      expect(full).toMatchObject({ mode: "full", due_reason: "catch-up", due_at: soon.last.toISOString() });
      expect(
        after.logs().some((l) => String(l.msg).startsWith("catching up: the full pass scheduled at")),
      ).toBe(true);
      expect((await after.stop()).code).toBe(0);
    },
  );

  it.each(dialects)(
    "does not catch up at start a full_cron time that fell while the mirror was paused and no daemon ran (%s)",
    async (dialect) => {
      const h = suite.use(
        await createHarness({ dialect, defaults: { incremental_cron: NEVER, full_cron: NEVER } }),
      );
      expect((await h.cli(["pause", "--mirror", "main"])).code).toBe(0);
      const soon = twoTimesSoon();
      setCrons(h, { incremental_cron: NEVER, full_cron: soon.cron });
      await until(() => Date.now() > soon.last.getTime() + 200, "both full_cron times to pass", 20_000);
      expect((await h.cli(["resume", "--mirror", "main"])).code).toBe(0);

      const d = await suite.daemon(h);
      await until(
        () => d.logs().some((l) => l.msg === "daemon started"),
        "the daemon's first look, done before it says it started",
      );
      expect(triggers(h), "a time that fell while paused is skipped, not caught up").toEqual([]);
      expect(schedule(h)?.due_mode).toBeNull();
      expect((await d.stop()).code).toBe(0);
    },
  );

  it("pauses and resumes from the CLI: paused ticks are skipped and counted, a running pass finishes", async () => {
    const h = suite.use(
      await createHarness({ defaults: { incremental_cron: EVERY_SECOND, full_cron: NEVER } }),
    );
    h.sim.runs.hold();
    const d = await suite.daemon(h);
    await until(() => triggerPosts(h) === 1, "a pass running");
    const paused = await h.cli(["pause", "--mirror", "main", "--json"]);
    expect(paused.code, paused.stderr).toBe(0);
    const reply = JSON.parse(paused.stdout) as Record<string, unknown>;
    const actor = `${userInfo().username}@${hostname()}`;
    expect(reply).toMatchObject({
      mirror: "main",
      action: "pause",
      changed: true,
      by: actor,
      due: null,
      paused: true,
      paused_since: reply.at,
      paused_by: actor,
    });
    expect(String(reply.running_on), "the running pass is named, not stopped").toMatch(/:\d+$/);
    expect(String(reply.message)).toContain("is not stopped");
    await until(
      async () => (await d.metric("syncmirror_mirror_paused", { mirror: "main" })) === 1,
      "the gauge",
    );
    await until(
      async () => (await d.metric("syncmirror_ticks_skipped_total", { reason: "paused" })) >= 2,
      "ticks skipped as paused",
    );
    h.sim.runs.release();
    await until(() => triggers(h)[0]?.state === "done", "the running pass to finish");
    const again = await h.cli(["pause", "--mirror", "main"]);
    expect(again.stdout).toContain("main was already paused");
    const status = await h.cli(["status"]);
    expect(status.stdout).toContain(`paused:                   since ${String(reply.at)} by ${actor}`);
    expect(triggers(h), "no pass started while paused").toHaveLength(1);
    const pausedJson = JSON.parse((await h.cli(["status", "--json"])).stdout) as {
      mirrors: Record<string, unknown>[];
    };
    expect(pausedJson.mirrors[0]).toMatchObject({ paused: true, paused_since: reply.at, paused_by: actor });

    const resumed = await h.cli(["resume", "--mirror", "main", "--json"]);
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ paused: false, paused_since: null, paused_by: null });
    const resumedJson = JSON.parse((await h.cli(["status", "--json"])).stdout) as typeof pausedJson;
    expect(resumedJson.mirrors[0]).toMatchObject({ paused: false, paused_since: null, paused_by: null });
    await until(() => triggers(h).length >= 2, "a pass at the next tick after resume");
    expect(await d.metric("syncmirror_mirror_paused", { mirror: "main" })).toBe(0);
    expect(h.query("SELECT action, actor FROM control_actions ORDER BY id")).toEqual([
      { action: "pause", actor },
      { action: "resume", actor },
    ]);
    expect((await d.stop()).code).toBe(0);
  });

  it("says in status that the next trigger is the full pass due, not the incremental an idle mirror would send", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    expect((await h.cli(["sync"])).code, "a baseline, so an incremental would send a since").toBe(0);
    h.sim.runs.hold();
    const d = await suite.daemon(h);
    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(() => triggerPosts(h) === 2, "the requested incremental running");
    expect((await h.cli(["trigger", "--mirror", "main", "--full"])).code).toBe(0);

    const status = JSON.parse((await h.cli(["status", "--json"])).stdout) as {
      mirrors: { due: { mode: string } | null; next_mode: string; next_since: string | null }[];
    };
    expect(status.mirrors[0]).toMatchObject({ due: { mode: "full" }, next_mode: "full", next_since: null });
    expect((await h.cli(["status"])).stdout).toContain("next trigger:             full (no since)");

    h.sim.runs.release();
    await until(() => triggers(h).filter((t) => t.state === "done").length === 3, "the full after it");
    expect(triggers(h).at(-1), "what status said came next").toMatchObject({ mode: "full" });
    expect((await d.stop()).code).toBe(0);
  });

  it("leaves a full asked for from the CLI to the daemon alive, which runs it though the mirror is paused", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    expect((await h.cli(["pause", "--mirror", "main"])).code).toBe(0);
    const d = await suite.daemon(h);
    const asked = await h.cli(["trigger", "--mirror", "main", "--full", "--json"]);
    expect(asked.code, asked.stderr).toBe(0);
    const reply = JSON.parse(asked.stdout) as { pass: unknown; paused: boolean; message: string };
    expect(reply).toMatchObject({ pass: null, paused: true });
    expect(reply.message).toContain(`Daemons alive: ${hostname()}:${d.child.pid}`);
    await until(() => triggers(h)[0]?.state === "done", "the requested full, taken by the daemon");
    expect(triggers(h)).toMatchObject([
      { mode: "full", due_reason: "requested", started_by_name: `${hostname()}:${d.child.pid}` },
    ]);
    expect(triggerPosts(h)).toBe(1);
    expect(schedule(h), "still paused, nothing more due").toMatchObject({ due_mode: null });
    expect(await d.metric("syncmirror_mirror_paused", { mirror: "main" })).toBe(1);
  });

  it("runs a triggered pass in the CLI itself when no daemon is alive, paused or not", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    expect((await h.cli(["pause", "--mirror", "main"])).code).toBe(0);
    const ran = await h.cli(["trigger", "--mirror", "main", "--full", "--json"]);
    expect(ran.code, ran.stderr).toBe(0);
    const reply = JSON.parse(ran.stdout) as {
      message: string;
      pass: { outcome: string; mode: string } | null;
    };
    expect(reply.pass).toMatchObject({ outcome: "succeeded", mode: "full" });
    expect(reply.message).toContain("is paused, but a requested pass runs anyway");
    expect(reply.message).toContain("No daemon is alive: this process ran it");
    const [row] = triggers(h);
    expect(row).toMatchObject({ mode: "full", due_reason: "requested", state: "done" });
    expect(row?.started_by_name).toMatch(new RegExp(`^${hostname()}:\\d+$`));
    expect(schedule(h)).toMatchObject({ due_mode: null, paused_by: `${userInfo().username}@${hostname()}` });
  });

  it("runs the asked pass itself, after the trigger a crashed process left in flight, when no daemon is alive", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    expect((await h.cli(["sync"], { SYNCMIRROR_CRASH_AT: "after-trigger-post" })).code).toBeNull();
    expect(triggers(h), "its POST answered, the answer never recorded").toMatchObject([{ state: "intent" }]);

    const ran = await h.cli(["trigger", "--mirror", "main", "--json"]);
    expect(ran.code, ran.stderr).toBe(0);
    const reply = JSON.parse(ran.stdout) as {
      pass: { outcome: string; finished_first?: { outcome: string } } | null;
    };
    expect(reply.pass, "the leftover finished first, then the pass asked for").toMatchObject({
      outcome: "succeeded",
      finished_first: { outcome: "succeeded" },
    });
    expect(triggers(h)).toMatchObject([
      { state: "done", due_reason: null },
      { state: "done", due_reason: "requested" },
    ]);
    expect(schedule(h)?.due_mode, "nothing left due for a daemon that may never come").toBeNull();
    expect(triggerPosts(h)).toBe(2);
  });

  it("records nothing when no daemon is alive and the token it would run the pass with is missing", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    const refused = await h.cli(["trigger", "--mirror", "main"], { [TOKEN_ENV]: "" });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`environment variable ${TOKEN_ENV} is set but empty`);
    expect(schedule(h)?.due_mode ?? null, "no pass left due").toBeNull();
    expect(h.query("SELECT action FROM control_actions")).toEqual([]);

    // With a daemon alive it runs the pass: this process only records it, and needs no token.
    await suite.daemon(h);
    const recorded = await h.cli(["trigger", "--mirror", "main"], { [TOKEN_ENV]: "" });
    expect(recorded.code, recorded.stderr).toBe(0);
    await until(() => triggers(h)[0]?.state === "done", "the requested pass, taken by the daemon");
    expect(triggers(h)).toMatchObject([{ due_reason: "requested", state: "done" }]);
  });

  it("forgets a daemon killed with kill -9 on this host before its heartbeat expires: status lists none, trigger runs the pass itself", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    // A heartbeat that outlasts the test: what tells the daemon gone is its pid, not an expiry.
    editConfig(h, (config) => {
      config.database = { ...(config.database as object), lease_seconds: 3600 };
    });
    const d = await suite.daemon(h);
    const alive = JSON.parse((await h.cli(["status", "--json"])).stdout) as { replicas: unknown[] };
    expect(alive.replicas).toMatchObject([{ name: `${hostname()}:${d.child.pid}` }]);
    d.child.kill("SIGKILL");
    await d.exited;
    expect(h.query("SELECT name FROM replicas"), "its heartbeat outlives it").toHaveLength(1);

    const status = await h.cli(["status", "--json"]);
    expect(JSON.parse(status.stdout), "no process runs under that name").toMatchObject({ replicas: [] });
    expect((await h.cli(["status"])).stdout).toContain("daemons alive: none");
    const ran = await h.cli(["trigger", "--mirror", "main"]);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain("No daemon is alive: this process ran it");
    expect(triggers(h)).toMatchObject([{ state: "done", due_reason: "requested" }]);
  });

  it("refuses a control without a mirror or for an unknown one (exit 2)", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    for (const verb of ["pause", "resume", "trigger"]) {
      const unknown = await h.cli([verb, "--mirror", "nope"]);
      expect(unknown.code, verb).toBe(2);
      expect(unknown.stderr).toContain('no mirror named "nope"');
      expect((await h.cli([verb])).code, `${verb} without --mirror`).toBe(2);
    }
    expect(triggerPosts(h)).toBe(0);
  });

  it("serves the controls over HTTP with the bearer token only, even on loopback", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    const d = await suite.daemon(h, { env: { SYNCMIRROR_HTTP_TOKEN: HTTP_TOKEN } });
    const post = (path: string, body?: string, token: string | null = HTTP_TOKEN) =>
      fetch(`http://127.0.0.1:${d.port}${path}`, {
        method: "POST",
        headers: token === null ? {} : { Authorization: `Bearer ${token}` },
        ...(body === undefined ? {} : { body }),
      });
    expect((await post("/v1/mirrors/main/pause", undefined, null)).status).toBe(401);
    expect((await post("/v1/mirrors/main/trigger", undefined, "wrong")).status).toBe(401);
    expect((await post("/v1/mirrors/nope/pause")).status).toBe(404);
    expect((await post("/v1/mirrors/main/trigger", '{"mode":"sometimes"}')).status).toBe(400);
    // A body that is not JSON is refused on every control, not taken as no body.
    for (const [action, body] of [
      ["pause", "{"],
      ["resume", "pause please"],
      ["trigger", "full"],
    ])
      expect((await post(`/v1/mirrors/main/${action}`, body)).status, `${action} ${body}`).toBe(400);
    expect((await fetch(`http://127.0.0.1:${d.port}/v1/mirrors/main/pause`)).status, "GET").toBe(401);
    const get = await fetch(`http://127.0.0.1:${d.port}/v1/mirrors/main/pause`, {
      headers: { Authorization: `Bearer ${HTTP_TOKEN}` },
    });
    expect(get.status).toBe(405);
    expect(triggers(h)).toEqual([]);

    const paused = await post("/v1/mirrors/main/pause");
    expect(paused.status).toBe(200);
    const pausedBody = (await paused.json()) as Record<string, unknown>;
    expect(pausedBody).toMatchObject({ action: "pause", changed: true, by: "http 127.0.0.1" });
    const cli = JSON.parse((await h.cli(["resume", "--mirror", "main", "--json"])).stdout) as object;
    expect(Object.keys(pausedBody).sort(), "the CLI's --json shape").toEqual(Object.keys(cli).sort());

    const triggered = await post("/v1/mirrors/main/trigger", '{"mode":"full"}');
    expect(triggered.status).toBe(200);
    expect(await triggered.json()).toMatchObject({ action: "trigger", mode: "full", pass: null });
    await until(() => triggers(h)[0]?.state === "done", "the requested pass, taken by the daemon");
    expect(triggers(h)[0]).toMatchObject({ mode: "full", due_reason: "requested" });
    expect(h.query("SELECT action, mode, actor FROM control_actions ORDER BY id")).toEqual([
      { action: "pause", mode: null, actor: "http 127.0.0.1" },
      { action: "resume", mode: null, actor: `${userInfo().username}@${hostname()}` },
      { action: "trigger", mode: "full", actor: "http 127.0.0.1" },
    ]);
    expect((await d.stop()).code).toBe(0);
  });
});
