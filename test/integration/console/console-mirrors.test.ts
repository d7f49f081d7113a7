/**
 * The operator console (docs/console-history.md, docs/console-controls.md) from the outside.
 * With two mirrors: `history`, `problems` and their `/v1/` twins name one mirror at a time and
 * agree word for word; an error and a problem name a source by its label (two notion servers:
 * `notion-eng-docs`); an incremental pass's history entry carries the `since` that `status` said
 * the next trigger would send; `syncmirror_problems` and `syncmirror_mirror_paused` are per mirror;
 * a trigger without a body asks for the mirror's next pass, `{"mode":"full"}` for a full one
 * (paused or not), and the pass that succeeds clears the problem it fixed. A held sweep stays a
 * problem until a full pass applies it (`sync --full --allow-mass-delete`), keeping its first
 * sighting. The state lives in the database alike on either store: this runs on SQLite only.
 */
import { describe, expect, it } from "vitest";
import type { HistoryJson } from "../../../src/console/history.js";
import type { ProblemsJson } from "../../../src/console/problems.js";
import { authorizedJson, configureConsumers, HTTP_TOKEN } from "../../helpers/consumers.js";
import { type DaemonProcess, until } from "../../helpers/daemon.js";
import type { Harness } from "../../helpers/mirror-harness.js";
import { createHarness } from "../../helpers/mirror-harness.js";
import { useMirrors } from "../../helpers/replicas.js";
import { daemonSuite, NEVER, setCrons } from "../daemon/setup.js";

const suite = daemonSuite();
const U1 = "user1@example.com";

interface StatusMirror {
  mirror: string;
  paused: boolean;
  next_since: string | null;
  next_mode: string;
  next_incremental_at: string | null;
  next_full_at: string | null;
}

const get = <T>(d: DaemonProcess, path: string) => authorizedJson<T>(d.port, path);

const post = (d: DaemonProcess, path: string, body?: string) =>
  fetch(`http://127.0.0.1:${d.port}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${HTTP_TOKEN}` },
    ...(body === undefined ? {} : { body }),
  });

async function cliJson<T>(h: Harness, args: string[]): Promise<T> {
  const r = await h.cli([...args, "--json"]);
  expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
  return JSON.parse(r.stdout) as T;
}

/** `/status`, the `status --json` object. */
const statusOf = async (d: DaemonProcess, name: string) =>
  (await get<{ mirrors: StatusMirror[] }>(d, "/status")).mirrors.find((m) => m.mirror === name);

describe("the console with two mirrors", () => {
  it("reads and controls one mirror at a time, the CLI and HTTP alike", async () => {
    // Two notion servers: a source is labelled by its type and its server's name.
    const h = suite.use(await createHarness({ sim: { docs: 30, serversPerType: { notion: 2 } } }));
    const [m1, m2] = useMirrors(h, 2) as [string, string];
    configureConsumers(h, { search: false });
    setCrons(h, { incremental_cron: NEVER, full_cron: NEVER });
    const notion = h.sim.servers.filter((s) => s.source_type === "notion")[1];
    const label = "notion-eng-docs";

    expect((await h.cli(["sync", "--mirror", m1])).code).toBe(0);
    h.sim.setOutcome(
      { user: U1, server_instance_id: notion?.server_instance_id as string },
      { task: "FAILED", error: "quota hit", times: 1 },
    );
    expect((await h.cli(["sync", "--mirror", m2])).code).toBe(1);
    const d = await suite.daemon(h);
    const expected = await statusOf(d, m1);
    expect(expected).toMatchObject({ next_mode: "incremental", next_since: expect.any(String) });
    // A trigger without a body asks for the mirror's next pass: here an incremental one.
    expect((await post(d, `/v1/mirrors/${m1}/trigger`)).status).toBe(200);
    const all = await until(async () => {
      const history = await get<HistoryJson>(d, "/v1/passes");
      return history.passes.length === 3 && history.passes[0]?.state === "done" && history;
    }, "the requested pass");

    // History: newest first, one mirror at a time, an incremental pass with the since status named.
    expect(all.passes.map((p) => [p.mirror, p.mode, p.outcome])).toEqual([
      [m1, "incremental", "succeeded"],
      [m2, "full", "partial"],
      [m1, "full", "succeeded"],
    ]);
    expect(all.passes[0]?.since).toBe(expected?.next_since);
    expect(all.passes[2]?.since).toBeNull();
    const newest = await get<HistoryJson>(d, "/v1/passes?limit=1");
    expect(newest.passes).toEqual([all.passes[0]]);
    expect(newest.next_before).toBe(all.passes[0]?.id);
    const ofM2 = await get<HistoryJson>(d, `/v1/passes?mirror=${m2}`);
    expect(ofM2).toEqual(await cliJson(h, ["history", "--mirror", m2]));
    expect(ofM2.passes).toEqual([all.passes[1]]);
    expect(ofM2.passes[0]?.errors).toEqual([
      expect.objectContaining({ user_email: U1, source: label, error: "FAILED: quota hit" }),
    ]);
    const olderOfM1 = await get<HistoryJson>(
      d,
      `/v1/passes?mirror=${m1}&limit=1&before=${all.passes[0]?.id}`,
    );
    expect(olderOfM1).toMatchObject({ passes: [all.passes[2]], next_before: null });
    const text = await h.cli(["history", "--mirror", m1, "--limit", "1"]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(all.passes[0]?.trigger_id);
    expect(text.stdout).not.toContain(all.passes[2]?.trigger_id);
    expect(text.stdout).not.toContain(all.passes[1]?.trigger_id);

    // Problems: m2's failed source only.
    expect((await get<ProblemsJson>(d, `/v1/problems?mirror=${m1}`)).problems).toEqual([]);
    const problemsM2 = await get<ProblemsJson>(d, `/v1/problems?mirror=${m2}`);
    expect(problemsM2).toEqual(await cliJson(h, ["problems", "--mirror", m2]));
    expect(problemsM2.problems).toEqual([
      expect.objectContaining({
        mirror: m2,
        kind: "failed_source",
        user_email: U1,
        server_instance_id: notion?.server_instance_id,
        source: label,
        reason: "FAILED: quota hit",
      }),
    ]);
    const problemsGauge = (mirror: string) =>
      d.metric("syncmirror_problems", { mirror, kind: "failed_source" });
    expect(await problemsGauge(m2)).toBe(1);
    expect(await problemsGauge(m1)).toBe(0);

    // Controls: pause m2 only, and ask for a full pass of it all the same.
    expect((await post(d, `/v1/mirrors/${m2}/pause`)).status).toBe(200);
    const paused = (mirror: string) => d.metric("syncmirror_mirror_paused", { mirror });
    expect(await paused(m2)).toBe(1);
    expect(await paused(m1)).toBe(0);
    expect(await statusOf(d, m2)).toMatchObject({ paused: true });
    expect(await statusOf(d, m1)).toMatchObject({
      paused: false,
      next_incremental_at: expect.any(String),
      next_full_at: expect.any(String),
    });
    const status = (await h.cli(["status"])).stdout;
    const ofStatus = (name: string) => status.slice(status.indexOf(`${name} (`)).split(/\n(?=\S)/)[0] ?? "";
    expect(ofStatus(m2)).toMatch(/next incremental: .*\(skipped: paused\)/);
    expect(ofStatus(m2)).toMatch(/next full: .*\(skipped: paused\)/);
    expect(ofStatus(m1)).toMatch(/next incremental: +\d{4}-/);
    expect(ofStatus(m1)).not.toContain("paused");

    expect((await post(d, `/v1/mirrors/${m2}/trigger`, '{"mode":"full"}')).status).toBe(200);
    const [full] = await until(async () => {
      const { passes } = await get<HistoryJson>(d, "/v1/passes?limit=1");
      return passes[0]?.id !== all.passes[0]?.id && passes[0]?.state === "done" && passes;
    }, "the requested full pass");
    expect(full).toMatchObject({ mirror: m2, mode: "full", since: null, outcome: "succeeded" });
    expect((await get<ProblemsJson>(d, "/v1/problems")).problems).toEqual([]);
    await until(async () => (await problemsGauge(m2)) === 0, "the gauge cleared");
    expect(await paused(m2), "a requested pass does not resume the mirror").toBe(1);

    // approve-sweep: an unknown mirror is bad usage, a mirror with nothing held is 1.
    expect((await h.cli(["approve-sweep", "--mirror", "nope"])).code).toBe(2);
    expect((await h.cli(["approve-sweep", "--mirror", m1])).code).toBe(1);
  });
});

describe("a held sweep as a problem", () => {
  it("stays open through a pass that sweeps nothing, keeps its first sighting, and clears when --allow-mass-delete applies it", async () => {
    const h = suite.use(await createHarness({ sim: { docs: 80 } }));
    await h.sync();
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id;
    for (const doc of h.sim.docs.list().filter((d) => d.server_instance_id === notion))
      h.sim.docs.remove(doc.docId);
    const held = await h.sync({ full: true });
    expect(held.outcome).toBe("partial");
    const heldProblems = async () =>
      (await cliJson<ProblemsJson>(h, ["problems"])).problems.filter((p) => p.kind === "held_sweep");
    const first = await heldProblems();
    expect(first.map((p) => p.user_email).sort()).toEqual([...h.sim.users].sort());
    // Each pair's problem counts its access rows; held_revocations the keys, each once.
    const heldRows = first.reduce((n, p) => n + (p.count ?? 0), 0);
    const notionKeys = h.query<{ n: number }>(
      "SELECT count(DISTINCT key) AS n FROM resource_access WHERE mirror = 'main' AND server_instance_id = ?",
      notion,
    )[0]?.n;
    expect(held.counts.held_revocations).toBe(notionKeys);
    expect(heldRows).toBeGreaterThan(held.counts.held_revocations);

    // An incremental pass sweeps nothing: it cannot have fixed a held sweep.
    expect((await h.sync()).outcome).toBe("succeeded");
    const again = await h.sync({ full: true });
    expect(again.counts.held_revocations).toBe(held.counts.held_revocations);
    const second = await heldProblems();
    expect(second.map((p) => [p.user_email, p.count, p.first_seen_at])).toEqual(
      first.map((p) => [p.user_email, p.count, p.first_seen_at]),
    );
    for (const [i, p] of second.entries())
      expect(Date.parse(p.last_seen_at)).toBeGreaterThan(Date.parse(first[i]?.last_seen_at ?? ""));

    const applied = await h.cli(["sync", "--full", "--allow-mass-delete", "--json"]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(await heldProblems()).toEqual([]);
    const [pass] = (await cliJson<HistoryJson>(h, ["history", "--limit", "1"])).passes;
    expect(pass).toMatchObject({
      mode: "full",
      outcome: "succeeded",
      counts: { revoked: heldRows, held: 0, sweeps_held: 0 },
      errors: [],
    });
  });
});
