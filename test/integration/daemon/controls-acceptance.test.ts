/**
 * The operator's controls as an outsider reads docs/console-controls.md and docs/console-history.md,
 * through `syncmirror run` and the CLI verbs on the suite's store: a resume given while no daemon
 * ran catches nothing up; a pause drops a scheduled pass waiting for a slot but keeps a requested
 * one; approve-sweep answers alike from the CLI and over HTTP and lets through only what was held.
 */
import { chmodSync, copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { spawnCli, until } from "../../helpers/daemon.js";
import { onPostgres } from "../../helpers/dialect.js";
import { accessOfSourceType, pickDocs } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { useMirrors } from "../../helpers/replicas.js";
import { triggerPosts } from "../../helpers/requests.js";
import { daemonSuite, editConfig, NEVER, setCrons, twoTimesSoon } from "./setup.js";

const suite = daemonSuite();
const HTTP_TOKEN = "controls-acceptance-93be";
const MAIN = { mirror: "main" };
/** A uid with no passwd entry, as a container's user often is. */
const NAMELESS_UID = 4242;
const NAMELESS = ["setpriv", "--reuid", `${NAMELESS_UID}`, "--regid", `${NAMELESS_UID}`, "--clear-groups"];

interface TriggerRow {
  mirror: string;
  mode: string;
  state: string;
  due_reason: string | null;
}

const triggers = (h: Harness) =>
  h.query<TriggerRow>("SELECT mirror, mode, state, due_reason FROM triggers ORDER BY id");
const dueOf = (h: Harness, mirror: string) =>
  h.query<{ due_mode: string | null; due_reason: string | null }>(
    "SELECT due_mode, due_reason FROM schedules WHERE mirror = ?",
    mirror,
  )[0];

describe("controls, as documented", () => {
  it("catches up no scheduled time that fell while paused, when no daemon ran and the resume came before the next start", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    expect((await h.cli(["sync"])).code, "a pass on record, so a later time is owed").toBe(0);
    expect((await h.cli(["pause", "--mirror", "main"])).code).toBe(0);
    const soon = twoTimesSoon();
    setCrons(h, { incremental_cron: NEVER, full_cron: soon.cron });
    await until(() => Date.now() > soon.last.getTime() + 200, "the full times to fall while paused", 20_000);
    expect((await h.cli(["resume", "--mirror", "main"])).code).toBe(0);

    const d = await suite.daemon(h);
    // The first look has run by /readyz; an incremental asked for now runs alone, not raised to a
    // caught-up full.
    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(() => triggers(h).filter((t) => t.state === "done").length === 2, "the requested pass");
    expect(triggers(h)).toEqual([
      { mirror: "main", mode: "full", state: "done", due_reason: null },
      { mirror: "main", mode: "incremental", state: "done", due_reason: "requested" },
    ]);
    expect(dueOf(h, "main")?.due_mode ?? null).toBeNull();
    expect(triggerPosts(h)).toBe(2);
    expect((await d.stop()).code).toBe(0);
  });

  it("drops a catch-up owed from before a pause given with no daemon, and resume does not bring it back", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    expect((await h.cli(["sync"])).code).toBe(0);
    const soon = twoTimesSoon();
    setCrons(h, { incremental_cron: NEVER, full_cron: soon.cron });
    await until(
      () => Date.now() > soon.last.getTime() + 200,
      "the full times to fall, no daemon running",
      20_000,
    );
    expect((await h.cli(["pause", "--mirror", "main"])).code).toBe(0);
    const d = await suite.daemon(h);
    expect(await d.metric("syncmirror_mirror_paused", MAIN)).toBe(1);
    const status = (await h.cli(["status"])).stdout;
    expect(status).toMatch(/next incremental: +2\d{3}-01-01T03:00:00.000Z \(skipped: paused\)/);
    expect(status).toMatch(/next full: +\S+Z \(skipped: paused\)/);
    const resumed = JSON.parse((await h.cli(["resume", "--mirror", "main", "--json"])).stdout) as {
      due: unknown;
    };
    expect(resumed.due, "nothing owed from before the pause").toBeNull();
    expect((await h.cli(["trigger", "--mirror", "main"])).code).toBe(0);
    await until(() => triggers(h).filter((t) => t.state === "done").length === 2, "the requested pass");
    expect(triggers(h)[1]).toEqual({
      mirror: "main",
      mode: "incremental",
      state: "done",
      due_reason: "requested",
    });
    expect((await d.stop()).code).toBe(0);
  });

  it("skips the times falling while paused with a daemon running; resume starts no burst of them", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    expect((await h.cli(["sync"])).code).toBe(0);
    expect((await h.cli(["pause", "--mirror", "main"])).code).toBe(0);
    // Far enough ahead for the daemon started next to be running when both times fall.
    const soon = twoTimesSoon(4000);
    setCrons(h, { incremental_cron: NEVER, full_cron: soon.cron });
    const d = await suite.daemon(h);
    await until(
      async () => (await d.metric("syncmirror_ticks_skipped_total", { ...MAIN, reason: "paused" })) === 2,
      "both full times skipped as paused",
      20_000,
    );
    expect(
      await d.metric("syncmirror_ticks_skipped_total", { ...MAIN, mode: "full", reason: "paused" }),
    ).toBe(2);
    const resumed = JSON.parse((await h.cli(["resume", "--mirror", "main", "--json"])).stdout) as {
      due: unknown;
    };
    expect(resumed.due).toBeNull();
    const asked = await h.cli(["trigger", "--mirror", "main"]);
    expect(asked.code).toBe(0);
    // When it became due, worded so that it is not read as the `since` the pass will send.
    expect(asked.stdout).toMatch(/^an incremental pass of main has been due since \d{4}-\d\d-\d\dT[^ ]+Z: /);
    await until(() => triggers(h).filter((t) => t.state === "done").length === 2, "the requested pass");
    expect(triggers(h)).toHaveLength(2);
    expect(triggers(h)[1]).toMatchObject({ mode: "incremental", due_reason: "requested" });
    expect(triggerPosts(h)).toBe(2);
    expect((await d.stop()).code).toBe(0);
  });

  it("refuses a control over HTTP whose body or method is wrong, recording nothing", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    const d = await suite.daemon(h, { env: { SYNCMIRROR_HTTP_TOKEN: HTTP_TOKEN } });
    const post = (action: string, body?: string, method = "POST") =>
      fetch(`http://127.0.0.1:${d.port}/v1/mirrors/main/${action}`, {
        method,
        headers: { Authorization: `Bearer ${HTTP_TOKEN}` },
        ...(body === undefined ? {} : { body }),
      });
    const refused: [string, string, number][] = [
      ["trigger", "null", 400],
      ["trigger", "[]", 400],
      ["trigger", '"full"', 400],
      ["trigger", '{"mode":null}', 400],
      ["trigger", '{"mode":"FULL"}', 400],
      ["pause", "[]", 400],
      ["resume", "7", 400],
      ["approve-sweep", '{"by":""}', 400],
      ["approve-sweep", '{"by":"  "}', 400],
      ["approve-sweep", `{"by":"${"a".repeat(201)}"}`, 400],
      ["approve-sweep", `{"by":"${"a".repeat(5000)}"}`, 413],
      ["approve-sweep", '{"by":5}', 400],
      ["trigger", `{"mode":"full","pad":"${"x".repeat(5000)}"}`, 413],
    ];
    for (const [action, body, status] of refused) {
      const res = await post(action, body);
      expect(res.status, `${action} ${body.slice(0, 40)}`).toBe(status);
      const answer = (await res.json()) as { error: { code: string; message: string } };
      expect(typeof answer.error.message, `${action} ${body.slice(0, 40)}`).toBe("string");
    }
    for (const action of ["pause", "resume", "trigger", "approve-sweep"]) {
      const res = await post(action, undefined, "PUT");
      expect(res.status, action).toBe(405);
      expect(res.headers.get("allow"), action).toContain("POST");
    }
    expect(h.query("SELECT action FROM control_actions")).toEqual([]);
    expect(dueOf(h, "main")?.due_mode ?? null).toBeNull();
    const nothingHeld = await post("approve-sweep", '{"by":"ana","note":"weekly"}');
    expect(nothingHeld.status, "keys approve-sweep does not use are ignored").toBe(409);
    const ignored = await post("trigger", '{"mode":"incremental","by":"ana"}');
    expect(ignored.status, "keys a control does not use are ignored").toBe(200);
    expect((await d.stop()).code).toBe(0);
  });

  it("refuses a control whose options come in the query string instead of the body, recording nothing", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    const d = await suite.daemon(h, { env: { SYNCMIRROR_HTTP_TOKEN: HTTP_TOKEN } });
    const post = (pathAndQuery: string) =>
      fetch(`http://127.0.0.1:${d.port}/v1/mirrors/main/${pathAndQuery}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${HTTP_TOKEN}` },
      });
    // `?mode=full` read as nothing would start an incremental pass the operator did not ask for.
    for (const [pathAndQuery, parameter] of [
      ["trigger?mode=full", "mode"],
      ["pause?mirror=main", "mirror"],
      ["resume?force=1", "force"],
      ["approve-sweep?by=ana", "by"],
    ] as const) {
      const res = await post(pathAndQuery);
      expect(res.status, pathAndQuery).toBe(400);
      const answer = (await res.json()) as { error: { code: string; message: string } };
      expect(answer.error.code, pathAndQuery).toBe("USAGE");
      expect(answer.error.message, pathAndQuery).toMatch(new RegExp(`^${parameter}: .*body`));
    }
    expect(h.query("SELECT action FROM control_actions")).toEqual([]);
    expect(dueOf(h, "main")?.due_mode ?? null).toBeNull();
    const empty = await post("trigger?mode=");
    expect(empty.status, "a parameter with an empty value counts as not given, as everywhere").toBe(200);
    expect((await d.stop()).code).toBe(0);
  });

  it("drops at the pause a scheduled pass waiting for a slot, keeps a requested one through a later pause", async () => {
    const h = suite.use(await createHarness({ defaults: { incremental_cron: NEVER, full_cron: NEVER } }));
    const [m1, m2] = useMirrors(h, 2) as [string, string];
    // Far enough ahead for the daemon to start and m1 to take the only slot first (checked below).
    const soon = twoTimesSoon(10_000, 2);
    editConfig(h, (c) => {
      c.max_concurrent_mirrors = 1;
      c.mirrors = (c.mirrors as Record<string, unknown>[]).map((m) =>
        m.name === m2 ? { ...m, full_cron: soon.cron } : m,
      );
    });
    h.sim.runs.hold();
    const d = await suite.daemon(h);
    expect((await h.cli(["trigger", "--mirror", m1])).code).toBe(0);
    await until(() => triggerPosts(h) === 1, "m1's pass running in the only slot");
    expect(Date.now(), "m1 took the slot before m2's time fell").toBeLessThan(soon.first.getTime());
    await until(() => dueOf(h, m2)?.due_reason === "schedule", "m2's scheduled full, waiting");

    const paused = JSON.parse((await h.cli(["pause", "--mirror", m2, "--json"])).stdout) as { due: unknown };
    expect(paused.due, "the scheduled pass is dropped").toBeNull();
    expect(dueOf(h, m2)?.due_mode ?? null).toBeNull();
    const asked = JSON.parse((await h.cli(["trigger", "--mirror", m2, "--json"])).stdout) as {
      due: { mode: string; reason: string };
    };
    expect(asked.due).toMatchObject({ mode: "incremental", reason: "requested" });
    expect((await h.cli(["resume", "--mirror", m2])).code).toBe(0);
    const pausedAgain = JSON.parse((await h.cli(["pause", "--mirror", m2, "--json"])).stdout) as {
      due: unknown;
    };
    expect(pausedAgain.due, "a requested pass stays due through a pause").toMatchObject({
      reason: "requested",
    });
    await until(() => Date.now() > soon.last.getTime() + 200, "m2's second full time, while paused", 20_000);

    h.sim.runs.release();
    await until(
      () => triggers(h).filter((t) => t.mirror === m2 && t.state === "done").length === 1,
      "m2's requested pass",
    );
    await until(() => triggers(h).every((t) => t.state === "done"), "every pass to end");
    expect(triggers(h).filter((t) => t.mirror === m2)).toEqual([
      { mirror: m2, mode: "full", state: "done", due_reason: "requested" },
    ]);
    expect(dueOf(h, m2)?.due_mode ?? null).toBeNull();
    expect(await d.metric("syncmirror_mirror_paused", { mirror: m2 })).toBe(1);
    expect((await d.stop()).code).toBe(0);
  });

  it("approves a held sweep alike from the CLI and over HTTP, and the daemon's full pass applies it once", async () => {
    const h = suite.use(
      await createHarness({ sim: { docs: 80 }, defaults: { incremental_cron: NEVER, full_cron: NEVER } }),
    );
    const d = await suite.daemon(h, { env: { SYNCMIRROR_HTTP_TOKEN: HTTP_TOKEN } });
    const post = (path: string, body?: string) =>
      fetch(`http://127.0.0.1:${d.port}${path}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${HTTP_TOKEN}` },
        ...(body === undefined ? {} : { body }),
      });
    const done = () => triggers(h).filter((t) => t.state === "done").length;
    expect((await h.cli(["trigger", "--mirror", "main", "--full"])).code).toBe(0);
    await until(() => done() === 1, "the first full");

    // Nothing held: exit 1 and one line, 409 with the same message; an unknown mirror: 2 / 404.
    const none = await h.cli(["approve-sweep", "--mirror", "main"]);
    expect(none.code).toBe(1);
    expect(none.stdout).toBe("");
    expect(none.stderr.trim().split("\n")).toHaveLength(1);
    const noneJson = await h.cli(["approve-sweep", "--mirror", "main", "--json"]);
    expect(noneJson.code).toBe(1);
    const noneHttp = await post("/v1/mirrors/main/approve-sweep");
    expect(noneHttp.status).toBe(409);
    const noneBody = (await noneHttp.json()) as { error: { code: string; message: string } };
    expect(noneBody.error.code).toBe("NOTHING_HELD");
    expect(JSON.parse(noneJson.stdout)).toEqual(noneBody);
    expect(none.stderr).toContain(noneBody.error.message);
    const unknown = await h.cli(["approve-sweep", "--mirror", "nope"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trim().split("\n")).toHaveLength(1);
    expect((await post("/v1/mirrors/nope/approve-sweep")).status).toBe(404);

    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id;
    for (const doc of pickDocs(h, 0, (x) => x.server_instance_id === notion && x.visibleTo.length > 0))
      h.sim.docs.remove(doc.docId);
    expect((await h.cli(["trigger", "--mirror", "main", "--full"])).code).toBe(0);
    await until(() => done() === 2, "the full that holds");
    // The approval covers access rows, pair by pair; the gauge counts the keys they hold back.
    const { rows: heldBack, keys: heldKeys } = accessOfSourceType(h, "notion");
    expect(heldBack).toBeGreaterThan(10);
    expect(heldKeys).toBeLessThan(heldBack);
    // The gauges are read back from the database just after the pass's last commit.
    const gauge = (n: number) => async () =>
      (await d.metric("syncmirror_held_revocations", { mirror: "main" })) === n;
    await until(gauge(heldKeys), "the gauge of the keys the held sweeps hold back");
    const heldSweeps = await d.metric("syncmirror_sweeps_held_total", { mirror: "main" });
    expect(heldSweeps).toBeGreaterThan(0);

    const viaHttp = await post("/v1/mirrors/main/approve-sweep", "{}");
    expect(viaHttp.status).toBe(200);
    const httpBody = (await viaHttp.json()) as Record<string, unknown>;
    const viaCli = await h.cli(["approve-sweep", "--mirror", "main", "--json"]);
    expect(viaCli.code, "approving again before it is taken replaces it").toBe(0);
    const cliBody = JSON.parse(viaCli.stdout) as Record<string, unknown>;
    expect(Object.keys(cliBody).sort()).toEqual(Object.keys(httpBody).sort());
    expect({ pairs: cliBody.pairs, up_to: cliBody.up_to }).toEqual({
      pairs: httpBody.pairs,
      up_to: heldBack,
    });
    expect(await d.metric("syncmirror_held_revocations", { mirror: "main" }), "held until applied").toBe(
      heldKeys,
    );

    expect((await h.cli(["trigger", "--mirror", "main", "--full"])).code).toBe(0);
    await until(() => done() === 3, "the approved full");
    expect(
      h.query(
        `SELECT count(*) AS n FROM resource_access a JOIN resources r ON r.key = a.key
         WHERE a.mirror = 'main' AND r.source_type = 'notion'`,
      ),
    ).toEqual([{ n: 0 }]);
    await until(gauge(0), "nothing held back any more");
    expect(await d.metric("syncmirror_access_revoked_total", { mirror: "main" })).toBe(heldBack);
    expect(await d.metric("syncmirror_sweeps_held_total", { mirror: "main" })).toBe(heldSweeps);
    const again = await h.cli(["approve-sweep", "--mirror", "main"]);
    expect(again.code, "taken: nothing is held any more").toBe(1);
    // The keys nobody sees any more were deleted, each with one delete change.
    const deletes = () =>
      h.query<{ key: string; n: number }>(
        `SELECT c.key, count(*) AS n FROM changes c JOIN resources r ON r.key = c.key
         WHERE c.op = 'delete' AND r.source_type = 'notion' GROUP BY c.key`,
      );
    const live = h.query("SELECT key FROM resources WHERE source_type = 'notion' AND deleted_at IS NULL");
    expect(live).toEqual([]);
    const deleted = deletes();
    expect(deleted.length).toBeGreaterThan(0);
    expect(deleted.every((r) => Number(r.n) === 1)).toBe(true);
    const seq = h.query<{ seq: number }>("SELECT max(seq) AS seq FROM changes")[0]?.seq;
    expect((await h.cli(["trigger", "--mirror", "main", "--full"])).code).toBe(0);
    await until(() => done() === 4, "one more full");
    expect(h.query("SELECT max(seq) AS seq FROM changes")[0]?.seq, "nothing applied twice").toEqual(seq);
    expect(await d.metric("syncmirror_access_revoked_total", { mirror: "main" })).toBe(heldBack);
    expect((await d.stop()).code).toBe(0);
  });
});

// The database must open for a user with no passwd entry: PostgreSQL's is not a file of root's.
describe.skipIf(!onPostgres)("who gave a control, for a user with no name (PostgreSQL)", () => {
  it("records approve-sweep by `uid N@host`, as pause records it", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 80 } }));
    await h.sync();
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id;
    for (const doc of pickDocs(h, 0, (x) => x.server_instance_id === notion && x.visibleTo.length > 0))
      h.sim.docs.remove(doc.docId);
    expect((await h.sync({ full: true })).outcome).toBe("partial");
    const dir = mkdtempSync(join(tmpdir(), "syncmirror-nameless-"));
    chmodSync(dir, 0o755);
    const config = join(dir, "syncmirror.yaml");
    copyFileSync(h.configPath, config);
    chmodSync(config, 0o644);
    const asNobody = async (args: string[]) => {
      const p = spawnCli([...args, "--config", config, "--json"], h.env, { wrap: NAMELESS });
      const exit = await p.exited;
      expect(exit.code, p.stderr()).toBe(0);
      return JSON.parse(p.stdout()) as { by: string };
    };
    const actor = `uid ${NAMELESS_UID}@${hostname()}`;
    expect((await asNobody(["pause", "--mirror", "main"])).by).toBe(actor);
    expect((await asNobody(["approve-sweep", "--mirror", "main"])).by).toBe(actor);
    rmSync(dir, { recursive: true });
  });
});
