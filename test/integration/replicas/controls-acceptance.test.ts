/**
 * The operator's controls with two replicas alive on one PostgreSQL database
 * (docs/console-controls.md, docs/console-history.md): a pause written while no daemon ran is
 * obeyed by both from their start; a trigger given to either runs once, on one replica, paused or
 * not; a held sweep shows on both replicas' gauges, and approved on one it is applied once by the
 * pass the other asks for.
 */
import { describe, expect, it } from "vitest";
import { type DaemonProcess, until } from "../../helpers/daemon.js";
import { accessOfSourceType, pickDocs } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { triggerPosts } from "../../helpers/requests.js";
import { daemonSuite, EVERY_SECOND, NEVER, setCrons } from "../daemon/setup.js";

const available = process.env.SYNCMIRROR_POSTGRES_AVAILABLE === "1";
const HTTP_TOKEN = "replica-acceptance-41f0";
const suite = daemonSuite();
const MAIN = { mirror: "main" };

const done = (h: Harness) =>
  h.query<{ mode: string; due_reason: string | null; started_by_name: string }>(
    "SELECT mode, due_reason, started_by_name FROM triggers WHERE state = 'done' ORDER BY id",
  );

function post(d: DaemonProcess, action: string, body?: string): Promise<Response> {
  return fetch(`http://127.0.0.1:${d.port}/v1/mirrors/main/${action}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${HTTP_TOKEN}` },
    ...(body === undefined ? {} : { body }),
  });
}

const both = async (
  name: string,
  a: DaemonProcess,
  b: DaemonProcess,
  labels: Record<string, string> = MAIN,
) => [await a.metric(name, labels), await b.metric(name, labels)];
const sum = async (name: string, a: DaemonProcess, b: DaemonProcess) =>
  (await both(name, a, b)).reduce((x, y) => x + y, 0);

describe.skipIf(!available)("controls with two replicas alive", () => {
  it("pause, trigger and approve-sweep: obeyed by both, each pass run once on one replica", async () => {
    const h = suite.use(await createHarness({ dialect: "postgres", sim: { docs: 80 } }));
    setCrons(h, { incremental_cron: EVERY_SECOND, full_cron: NEVER });
    const offline = await h.cli(["pause", "--mirror", "main", "--json"]);
    expect(offline.code, offline.stderr).toBe(0);
    expect(JSON.parse(offline.stdout)).toMatchObject({ changed: true, paused: true, running_on: null });
    const env = { env: { SYNCMIRROR_HTTP_TOKEN: HTTP_TOKEN } };
    const a = await suite.daemon(h, env);
    const b = await suite.daemon(h, env);
    expect(await both("syncmirror_mirror_paused", a, b), "from the first scrape").toEqual([1, 1]);
    await until(
      async () =>
        (await both("syncmirror_ticks_skipped_total", a, b, { ...MAIN, reason: "paused" })).every(
          (n) => n >= 2,
        ),
      "both replicas skipping ticks as paused",
    );
    expect(triggerPosts(h), "a paused mirror is never due").toBe(0);

    // A trigger over HTTP on a paused mirror runs once, on one replica.
    const asked = await post(b, "trigger", '{"mode":"full"}');
    expect(asked.status).toBe(200);
    expect(await asked.json()).toMatchObject({ mode: "full", paused: true, pass: null });
    await until(() => done(h).length === 1, "the requested full");
    expect(done(h)).toMatchObject([{ mode: "full", due_reason: "requested" }]);
    expect(triggerPosts(h)).toBe(1);
    await until(
      async () => (await sum("syncmirror_triggers_total", a, b)) === 1,
      "the pass counted by the replica that ran it",
    );

    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id;
    for (const doc of pickDocs(h, 0, (x) => x.server_instance_id === notion && x.visibleTo.length > 0))
      h.sim.docs.remove(doc.docId);
    expect((await h.cli(["trigger", "--mirror", "main", "--full"])).code).toBe(0);
    await until(() => done(h).length === 2, "the full that holds");
    // Revocations count access rows; the gauge counts the keys they would take.
    const { rows: heldBack, keys: heldKeys } = accessOfSourceType(h, "notion");
    expect(heldBack).toBeGreaterThan(10);
    await until(
      async () => (await both("syncmirror_held_revocations", a, b)).every((n) => n === heldKeys),
      "both replicas gauging what the held sweep holds back",
    );
    expect(await sum("syncmirror_sweeps_held_total", a, b)).toBe(h.sim.users.length);

    expect((await post(a, "approve-sweep", '{"by":"ana"}')).status).toBe(200);
    expect((await post(b, "trigger", '{"mode":"full"}')).status).toBe(200);
    await until(() => done(h).length === 3, "the approved full");
    expect(triggerPosts(h)).toBe(3);
    await until(
      async () => (await both("syncmirror_held_revocations", a, b)).every((n) => n === 0),
      "nothing held back any more, on both",
    );
    expect(await sum("syncmirror_access_revoked_total", a, b)).toBe(heldBack);
    expect(
      h.query(
        `SELECT count(*) AS n FROM resource_access a JOIN resources r ON r.key = a.key
         WHERE a.mirror = 'main' AND r.source_type = 'notion'`,
      ),
    ).toEqual([{ n: 0 }]);
    const names = new Set(done(h).map((t) => t.started_by_name));
    expect(names.size, "each pass started by a replica").toBeGreaterThanOrEqual(1);

    const resumed = await post(a, "resume");
    expect(resumed.status).toBe(200);
    await until(
      async () => (await both("syncmirror_mirror_paused", a, b)).every((n) => n === 0),
      "both replicas seeing the resume",
    );
    await until(() => done(h).length >= 4, "a scheduled pass after the resume");
    expect(done(h)[3]).toMatchObject({ mode: "incremental", due_reason: "schedule" });

    // Paused on one replica while the other runs a pass: that pass finishes, nothing starts after.
    h.sim.runs.hold();
    const running = await until(
      () =>
        h.query<{ id: number; started_by_name: string; trigger_id: string | null }>(
          "SELECT id, started_by_name, trigger_id FROM triggers WHERE state <> 'done' AND trigger_id IS NOT NULL",
        )[0],
      "a scheduled pass in flight",
    );
    const other = running.started_by_name.endsWith(`:${a.child.pid}`) ? b : a;
    const pause = await post(other, "pause");
    expect(pause.status).toBe(200);
    const reply = (await pause.json()) as { running_on: string | null; message: string };
    expect(reply.running_on).toBe(running.started_by_name);
    expect(reply.message).toContain("is not stopped");
    const posts = triggerPosts(h);
    h.sim.runs.release();
    await until(
      () => h.query("SELECT 1 FROM triggers WHERE state <> 'done'").length === 0,
      "the pass running at the pause to finish",
    );
    const skipped = (
      await both("syncmirror_ticks_skipped_total", a, b, { ...MAIN, reason: "paused" })
    ).reduce((x, y) => x + y);
    await until(
      async () =>
        (await both("syncmirror_ticks_skipped_total", a, b, { ...MAIN, reason: "paused" })).reduce(
          (x, y) => x + y,
        ) >=
        skipped + 2,
      "more ticks skipped as paused",
    );
    expect(triggerPosts(h), "nothing started after the pause").toBe(posts);
    for (const d of [a, b]) expect((await d.stop()).code).toBe(0);
  });
});
