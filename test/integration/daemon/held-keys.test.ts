/**
 * `held_revocations` counts keys (docs/reference/metrics.md): documents whose revocation a held
 * sweep is holding back, each once however many users would lose it. Three users share twelve
 * documents of one server that all vanish upstream: the guard holds three sweeps of 12 access rows
 * each, and every place that shows the count says 12, while the problems and `approve-sweep`'s
 * `up_to` still count the 36 access rows. The approved sweep, killed half way and resumed, takes
 * each user's access to each key once and brings the count to 0 everywhere.
 */
import { describe, expect, it } from "vitest";
import type { ApprovalJson } from "../../../src/console/approve-sweep.js";
import type { HistoryJson } from "../../../src/console/history.js";
import type { ProblemsJson } from "../../../src/console/problems.js";
import type { MirrorStatus } from "../../../src/sync/status-report.js";
import type { MirrorSummary } from "../../../src/sync/summary.js";
import { configureConsumers, HTTP_TOKEN } from "../../helpers/consumers.js";
import type { DaemonProcess } from "../../helpers/daemon.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { triggerPosts } from "../../helpers/requests.js";
import { daemonSuite, NEVER } from "./setup.js";

const suite = daemonSuite();
const SHARED = 12;

async function cliJson<T>(h: Harness, args: string[], code = 0): Promise<T> {
  const r = await h.cli([...args, "--json"]);
  expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(code);
  return JSON.parse(r.stdout) as T;
}

async function api<T>(d: DaemonProcess, path: string): Promise<T> {
  const res = await fetch(`http://127.0.0.1:${d.port}${path}`, {
    headers: { authorization: `Bearer ${HTTP_TOKEN}` },
  });
  expect(res.status, path).toBe(200);
  return (await res.json()) as T;
}

/** What a daemon serves of the held count: the gauge, `/status`, and the newest pass of `/v1/passes`. */
async function servedHeld(h: Harness): Promise<{ metric: number; status: number; pass: number }> {
  const d = await suite.daemon(h);
  const served = {
    metric: await d.metric("syncmirror_held_revocations", { mirror: "main" }),
    status: (await api<{ mirrors: MirrorStatus[] }>(d, "/status")).mirrors[0]?.held_revocations ?? -1,
    pass: (await api<HistoryJson>(d, "/v1/passes?mirror=main&limit=1")).passes[0]?.counts.held ?? -1,
  };
  // A SQLite database has one writer: the passes below run beside no daemon.
  expect((await d.stop()).code).toBe(0);
  return served;
}

/** Every CLI view of the held count: `status --json` and the newest pass of `history --json`. */
async function cliHeld(h: Harness): Promise<{ status: number; pass: number }> {
  const status = await cliJson<{ mirrors: MirrorStatus[] }>(h, ["status"]);
  const history = await cliJson<HistoryJson>(h, ["history", "--mirror", "main", "--limit", "1"]);
  return { status: status.mirrors[0]?.held_revocations ?? -1, pass: history.passes[0]?.counts.held ?? -1 };
}

describe("held revocations count keys", () => {
  it("3 users x 12 shared keys held is 12 everywhere; approved, killed mid-sweep and resumed, each access goes once and the count is 0", async () => {
    const h = suite.use(
      await createHarness({
        sim: { docs: 40, users: 3 },
        defaults: { incremental_cron: NEVER, full_cron: NEVER },
      }),
    );
    configureConsumers(h, { search: false });
    const users = [...h.sim.users];
    expect(users).toHaveLength(3);
    // One server's documents: twelve that every user sees, no other (so each pair's sweep is all it holds).
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id;
    const onNotion = h.sim.docs.list().filter((d) => d.server_instance_id === notion && !d.deleted);
    expect(onNotion.length).toBeGreaterThan(SHARED);
    const shared = onNotion.slice(0, SHARED);
    for (const d of shared) h.sim.docs.setVisibility(d.docId, users);
    for (const d of onNotion.slice(SHARED)) h.sim.docs.remove(d.docId);
    expect((await h.cli(["sync"])).code).toBe(0);
    const notionAccess = () =>
      h.query<{ user_email: string; key: string }>(
        "SELECT user_email, key FROM resource_access WHERE mirror = 'main' AND server_instance_id = ? ORDER BY key, user_email",
        notion,
      );
    const keys = [...new Set(notionAccess().map((a) => a.key))];
    expect(keys).toHaveLength(SHARED);
    expect(notionAccess()).toHaveLength(SHARED * users.length);

    for (const d of shared) h.sim.docs.remove(d.docId);
    const heldSync = await cliJson<{ mirrors: MirrorSummary[] }>(h, ["sync", "--full"], 1);
    expect(heldSync.mirrors[0]).toMatchObject({
      outcome: "partial",
      counts: { sweeps_held: 3, held_revocations: SHARED, access_revoked: 0, deleted: 0 },
    });
    expect(await cliHeld(h)).toEqual({ status: SHARED, pass: SHARED });
    expect(await servedHeld(h)).toEqual({ metric: SHARED, status: SHARED, pass: SHARED });
    // Each pair's problem, and the approval of them all, count access rows.
    const { problems } = await cliJson<ProblemsJson>(h, ["problems"]);
    expect(problems.filter((p) => p.kind === "held_sweep").map((p) => [p.user_email, p.count])).toEqual(
      [...users].sort().map((u) => [u, SHARED]),
    );
    const approval = await cliJson<ApprovalJson>(h, ["approve-sweep", "--mirror", "main"]);
    expect(approval).toMatchObject({ pairs: 3, up_to: SHARED * users.length });

    // Killed after the first user's sweep committed (the first mid-sweep point follows the batch
    // that takes the approval and finds every run revoking), then resumed.
    const triggersBefore = triggerPosts(h);
    const seqBefore = h.query<{ seq: number }>("SELECT coalesce(max(seq), 0) AS seq FROM changes")[0]?.seq;
    const crashed = await h.cli(["sync", "--full"], { SYNCMIRROR_CRASH_AT: "mid-sweep:2" });
    expect(crashed.code, `expected SIGKILL at mid-sweep:2; stderr: ${crashed.stderr}`).toBeNull();
    const left = notionAccess().length;
    expect(left, "killed with some access revoked, some not").toBeGreaterThan(0);
    expect(left).toBeLessThan(SHARED * users.length);
    const resumed = await cliJson<{ mirrors: MirrorSummary[] }>(h, ["sync", "--full"]);
    expect(triggerPosts(h) - triggersBefore, "the killed pass resumed, not triggered again").toBe(1);
    expect(resumed.mirrors[0]).toMatchObject({
      outcome: "succeeded",
      resumed: true,
      counts: {
        sweeps_held: 0,
        held_revocations: 0,
        access_revoked: SHARED * users.length,
        deleted: SHARED,
      },
    });
    expect(notionAccess()).toEqual([]);
    // Each key left the feed once: one delete, no access change left behind by the killed attempt.
    const changes = h.query<{ key: string; op: string }>(
      "SELECT key, op FROM changes WHERE seq > ? ORDER BY key, seq",
      seqBefore,
    );
    expect(changes).toEqual(keys.map((key) => ({ key, op: "delete" })));
    expect(await cliHeld(h)).toEqual({ status: 0, pass: 0 });
    const [pass] = (await cliJson<HistoryJson>(h, ["history", "--mirror", "main", "--limit", "1"])).passes;
    expect(pass).toMatchObject({
      counts: { revoked: SHARED * users.length, held: 0, sweeps_held: 0 },
      sweep_approval: { pairs: 3, up_to: SHARED * users.length, used: SHARED * users.length },
    });
    expect(await servedHeld(h)).toEqual({ metric: 0, status: 0, pass: 0 });
  });
});
