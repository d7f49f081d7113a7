/**
 * docs/console-history.md over a running daemon on the suite's store: `/v1/passes`, `/v1/problems`
 * and `POST /v1/mirrors/{name}/approve-sweep` need the bearer token even on loopback and answer the
 * CLI's `--json`; `syncmirror_problems` is read from the database (right after a restart, and when
 * another process changes the problems); an approval given to the daemon is obeyed by the full
 * pass another process runs.
 */
import { describe, expect, it } from "vitest";
import { configureConsumers, HTTP_TOKEN } from "../../helpers/consumers.js";
import { type DaemonProcess, until } from "../../helpers/daemon.js";
import { execute } from "../../helpers/db-write.js";
import { pickDocs } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { daemonSuite, NEVER, setCrons } from "../daemon/setup.js";

const suite = daemonSuite();
const U1 = "user1@example.com";

async function call(
  d: DaemonProcess,
  path: string,
  init: { method?: string; token?: string | null; body?: string } = {},
): Promise<{ status: number; json: unknown }> {
  const token = init.token === undefined ? HTTP_TOKEN : init.token;
  const res = await fetch(`http://127.0.0.1:${d.port}${path}`, {
    method: init.method ?? "GET",
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
    ...(init.body === undefined ? {} : { body: init.body }),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

async function cliJson(h: Harness, args: string[]): Promise<unknown> {
  const r = await h.cli([...args, "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

/**
 * Passes run before the daemon starts: a full pass whose sweep the guard held for every user but
 * one, whose source failed with the service's text (or for every user, `failing: false`). The
 * daemon never syncs by itself.
 */
async function servedWithProblems(
  failing = true,
): Promise<{ h: Harness; d: DaemonProcess; heldRows: number; heldPairs: number }> {
  const h = suite.use(await createHarness({ sim: { docs: 80 } }));
  configureConsumers(h, { search: false });
  const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id as string;
  await h.sync();
  for (const doc of pickDocs(h, 0, (d) => d.server_instance_id === notion)) h.sim.docs.remove(doc.docId);
  if (failing)
    h.sim.setOutcome(
      { user: U1, server_instance_id: notion },
      { task: "FAILED", error: "quota exceeded", times: 1 },
    );
  const full = await h.sync({ full: true });
  expect(full.counts.held_revocations).toBeGreaterThan(0);
  setCrons(h, { incremental_cron: NEVER, full_cron: NEVER });
  const heldPairs = h.sim.users.length - (failing ? 1 : 0);
  // What an approval covers: the held pairs' access rows (held_revocations counts their keys).
  const heldRows = h.query<{ n: number }>(
    "SELECT count(*) AS n FROM resource_access WHERE mirror = 'main' AND server_instance_id = ? AND user_email <> ?",
    notion,
    failing ? U1 : "",
  )[0]?.n as number;
  expect(heldRows).toBeGreaterThan(full.counts.held_revocations);
  return { h, d: await suite.daemon(h), heldRows, heldPairs };
}

describe("the console over HTTP", () => {
  it("needs the bearer token on every console endpoint, even on loopback, and answers the CLI's JSON", async () => {
    const { h, d } = await servedWithProblems();
    const paths = ["/v1/passes", "/v1/passes?limit=1", "/v1/problems", "/v1/problems?mirror=main"];
    for (const path of [...paths, "/v1/mirrors/main/approve-sweep"]) {
      for (const token of [null, "wrong", `${HTTP_TOKEN}x`]) {
        const method = path.endsWith("approve-sweep") ? "POST" : "GET";
        const res = await call(d, path, { method, token });
        expect(res, `${method} ${path} with ${token}`).toEqual({
          status: 401,
          json: { error: { code: "UNAUTHORIZED", message: expect.stringMatching(/bearer token/) } },
        });
      }
    }
    expect((await cliJson(h, ["problems"])) as { pending_sweep_approvals: unknown[] }).toMatchObject({
      pending_sweep_approvals: [],
    });

    const passes = await call(d, "/v1/passes");
    expect(passes.status).toBe(200);
    expect(passes.json).toEqual(await cliJson(h, ["history"]));
    // Parameters left empty are not given: the defaults apply.
    expect((await call(d, "/v1/passes?mirror=&limit=&before=")).json).toEqual(passes.json);
    const { passes: entries } = passes.json as { passes: { id: number }[] };
    expect(entries).toHaveLength(2);
    const older = await call(d, `/v1/passes?limit=1&before=${entries[0]?.id}`);
    expect(older.json).toEqual(
      await cliJson(h, ["history", "--limit", "1", "--before", String(entries[0]?.id)]),
    );
    expect((older.json as { passes: { id: number }[] }).passes.map((p) => p.id)).toEqual([entries[1]?.id]);
    const startedAt = (entries[0] as unknown as { started_at: string }).started_at;
    expect((await call(d, `/v1/passes?limit=1&before=${startedAt}`)).json, "before a time").toEqual(
      older.json,
    );
    const offset = startedAt.replace("Z", "+00:00");
    expect((await call(d, `/v1/passes?limit=1&before=${offset}`)).json, "its + unencoded").toEqual(
      older.json,
    );
    const problems = await call(d, "/v1/problems?mirror=main");
    expect(problems.status).toBe(200);
    expect(problems.json).toEqual(await cliJson(h, ["problems", "--mirror", "main"]));
    expect(problems.json).toMatchObject({
      counts: { main: { failed_source: 1, held_sweep: h.sim.users.length - 1, rejected_row: 0 } },
    });

    for (const path of [
      "/v1/passes?limit=0",
      "/v1/passes?before=x",
      "/v1/passes?before=2026-02-30",
      "/v1/problems?mirror=nope",
      "/v1/passes?x=1",
    ])
      expect((await call(d, path)).status, path).toBe(400);
    expect((await call(d, "/v1/passes", { method: "POST" })).status).toBe(405);
    expect((await call(d, "/v1/mirrors/main/approve-sweep")).status).toBe(405);
    expect((await call(d, "/v1/changes?after=0", { method: "POST" })).status).toBe(405);
    expect((await call(d, "/v1/mirrors/nope/approve-sweep", { method: "POST" })).status).toBe(404);
    expect((await call(d, "/v1/mirrors/main/approve-sweep", { method: "POST", body: "{" })).status).toBe(400);
    // A body over the limit is 413 on every control, as docs/reference/http.md says.
    const huge = JSON.stringify({ by: "x".repeat(20_000) });
    for (const action of ["approve-sweep", "trigger"])
      expect(
        (await call(d, `/v1/mirrors/main/${action}`, { method: "POST", body: huge })).json,
        action,
      ).toEqual({
        error: { code: "BODY_TOO_LARGE", message: expect.stringMatching(/at most \d+ bytes/) },
      });
    expect((await fetch(`http://127.0.0.1:${d.port}/status`, { method: "POST" })).status).toBe(405);
  });

  it("serves syncmirror_problems from the database, after a restart and as another process changes it", async () => {
    const { h, d } = await servedWithProblems();
    const problems = (kind: string) => d.metric("syncmirror_problems", { mirror: "main", kind });
    expect(await problems("failed_source")).toBe(1);
    expect(await problems("held_sweep")).toBe(h.sim.users.length - 1);
    const metrics = (await d.get("/metrics")).body;
    for (const kind of ["rejected_row", "incomplete_source", "skipped_pair", "config_error"])
      expect(metrics).toContain(`syncmirror_problems{mirror="main",kind="${kind}"} 0`);

    // Another replica's pass (here a plain write) records a problem: this one's gauge follows.
    await execute(
      h,
      `INSERT INTO problems (mirror, subject, kind, user_email, reason, first_seen_at, last_seen_at)
       VALUES ('main', 'elsewhere', 'skipped_pair', ?, 'not_accessible', ?, ?)`,
      U1,
      new Date().toISOString(),
      new Date().toISOString(),
    );
    await until(async () => (await problems("skipped_pair")) === 1, "the gauge to count the new problem");
  });

  it("records an approval given over HTTP, which the full pass of another process applies", async () => {
    const { h, d, heldRows, heldPairs } = await servedWithProblems(false);
    const approved = await call(d, "/v1/mirrors/main/approve-sweep", {
      method: "POST",
      // A key the endpoint does not use is ignored, as /trigger ignores it.
      body: JSON.stringify({ by: "ana", note: "weekly cleanup" }),
    });
    expect(approved).toEqual({
      status: 200,
      json: {
        mirror: "main",
        pairs: heldPairs,
        up_to: heldRows,
        by: "ana (http 127.0.0.1)",
        at: expect.any(String),
        message: expect.stringContaining(`up to ${heldRows} access row(s)`),
      },
    });
    const pending = [
      {
        mirror: "main",
        pairs: heldPairs,
        up_to: heldRows,
        by: "ana (http 127.0.0.1)",
        at: (approved.json as { at: string }).at,
      },
    ];
    expect((await call(d, "/v1/problems")).json).toMatchObject({ pending_sweep_approvals: pending });
    expect((await call(d, "/v1/passes")).json).toMatchObject({ pending_sweep_approvals: pending });
    await d.stop();

    const full = await h.cli(["sync", "--full", "--json"]);
    expect(full.code, full.stderr).toBe(0);
    const [pass] = ((await cliJson(h, ["history"])) as { passes: { sweep_approval: unknown }[] }).passes;
    expect(pass?.sweep_approval).toEqual({
      pairs: heldPairs,
      up_to: heldRows,
      used: heldRows,
      by: "ana (http 127.0.0.1)",
      at: pending[0]?.at,
    });

    const again = await suite.daemon(h);
    const none = await call(again, "/v1/mirrors/main/approve-sweep", { method: "POST" });
    expect(none.status).toBe(409);
    // The CLI's --json document when nothing is held (exit 1), word for word.
    const cli = await h.cli(["approve-sweep", "--mirror", "main", "--json"]);
    expect(cli.code, cli.stderr).toBe(1);
    expect(none.json).toEqual(JSON.parse(cli.stdout));
    expect(none.json).toEqual({
      error: { code: "NOTHING_HELD", message: expect.stringMatching(/no held sweep/) },
    });
  });
});
