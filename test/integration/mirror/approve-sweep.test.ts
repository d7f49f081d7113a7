/**
 * docs/console-history.md, `approve-sweep`, through the real CLI on the suite's store: a sweep the
 * mass-delete guard held is a problem per pair; the approval is stored (visible before use), taken
 * by the next full pass only, which applies up to the number approved and names who approved in
 * its history entry; a pair that would revoke more than approved is held again; a pair that pass
 * could not sweep (its source failed) keeps its approval for the next full pass; nothing held,
 * nothing approved (exit 1).
 */
import { hostname, userInfo } from "node:os";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ApprovalJson } from "../../../src/console/approve-sweep.js";
import type { HistoryJson } from "../../../src/console/history.js";
import type { ProblemsJson } from "../../../src/console/problems.js";
import { accessRows, pickDocs } from "../../helpers/mirror-db.js";
import { createHarness, expectedKeys, type Harness, visibleKeys } from "../../helpers/mirror-harness.js";
import { buildOnce } from "../daemon/setup.js";

let h: Harness;
beforeAll(buildOnce);
afterEach(async () => {
  await h?.close();
});

const notionOf = (h: Harness) =>
  h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id as string;

/** Removes `share` of the notion documents still there, so a full snapshot misses their keys. */
function removeNotionDocs(share: number): void {
  const notion = notionOf(h);
  const docs = pickDocs(h, 0, (d) => d.server_instance_id === notion && d.visibleTo.length > 0);
  for (const d of docs.slice(0, Math.ceil(docs.length * share))) h.sim.docs.remove(d.docId);
}

/**
 * Every notion document removed while user1's notion source fails once: the full pass holds the
 * other users' sweeps, and `approve-sweep` approves those (user1's was never held).
 */
async function approveAllButUser1() {
  h = await createHarness({ sim: { docs: 80 } });
  await h.sync();
  const [u1, ...others] = h.sim.users;
  removeNotionDocs(1);
  h.sim.setOutcome({ user: u1, server_instance_id: notionOf(h) }, { task: "FAILED", times: 1 });
  await h.sync({ full: true });
  const approval = await json<ApprovalJson>(["approve-sweep", "--mirror", "main"]);
  expect(approval.pairs).toBe(others.length);
  return { u1: u1 as string, others, approvedRows: approval.up_to };
}

async function json<T>(args: string[]): Promise<T> {
  const r = await h.cli([...args, "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as T;
}

describe("approve-sweep", () => {
  it("lets the next full pass apply the held revocations, once, and its history names who approved", async () => {
    h = await createHarness({ sim: { docs: 80 } });
    await h.sync();
    removeNotionDocs(1);
    const held = await h.sync({ full: true });
    expect(held.outcome).toBe("partial");
    const before = await json<ProblemsJson>(["problems"]);
    const sweeps = before.problems.filter((p) => p.kind === "held_sweep");
    expect(sweeps).toHaveLength(h.sim.users.length);
    // Each pair's problem, the approval and the revocations count access rows; held_revocations
    // counts the keys they hold back, a document several users see once.
    const heldRows = sweeps.reduce((n, p) => n + (p.count ?? 0), 0);
    const notionKeys = new Set(
      accessRows(h)
        .filter((a) => a.server_instance_id === notionOf(h))
        .map((a) => a.key),
    );
    expect(held.counts.held_revocations).toBe(notionKeys.size);
    expect(heldRows).toBeGreaterThan(notionKeys.size);
    expect(sweeps[0]).toMatchObject({
      server_instance_id: notionOf(h),
      reason: expect.stringMatching(/approve-sweep/),
    });

    const approval = await json<ApprovalJson>(["approve-sweep", "--mirror", "main"]);
    const operator = `${userInfo().username}@${hostname()}`;
    expect(approval).toMatchObject({
      mirror: "main",
      pairs: h.sim.users.length,
      up_to: heldRows,
      by: operator,
    });
    const pending = [
      { mirror: "main", pairs: h.sim.users.length, up_to: heldRows, by: operator, at: approval.at },
    ];
    expect((await json<HistoryJson>(["history"])).pending_sweep_approvals).toEqual(pending);
    expect((await json<ProblemsJson>(["problems"])).pending_sweep_approvals).toEqual(pending);

    expect((await h.sync()).mode, "an incremental pass leaves the approval alone").toBe("incremental");
    expect((await json<HistoryJson>(["history"])).pending_sweep_approvals).toEqual(pending);

    const applied = await h.cli(["sync", "--full", "--json"]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(JSON.parse(applied.stdout).mirrors[0].counts).toMatchObject({
      access_revoked: heldRows,
      held_revocations: 0,
    });
    for (const user of h.sim.users) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
    const history = await json<HistoryJson>(["history"]);
    expect(history.pending_sweep_approvals).toEqual([]);
    expect(history.passes[0]).toMatchObject({
      mode: "full",
      outcome: "succeeded",
      counts: { revoked: heldRows, held: 0 },
      sweep_approval: {
        pairs: h.sim.users.length,
        up_to: heldRows,
        used: heldRows,
        by: operator,
        at: approval.at,
      },
    });
    expect(history.passes[1]?.sweep_approval, "the incremental took none").toBeNull();
    expect((await json<ProblemsJson>(["problems"])).problems).toEqual([]);
  });

  it("holds again a pair that would revoke more than was approved, beyond the guard's allowance", async () => {
    h = await createHarness({ sim: { docs: 120, users: 1 }, defaults: { max_delete_fraction: 0.1 } });
    await h.sync();
    removeNotionDocs(0.2);
    const first = await h.sync({ full: true });
    // One user: the pair's rows are the keys it holds back.
    const approved = first.counts.held_revocations;
    expect(approved).toBeGreaterThan(10);
    expect((await h.cli(["approve-sweep", "--mirror", "main"])).code).toBe(0);
    // Past what was approved plus what the guard lets through anyway (10 keys, 10% of the pair's).
    removeNotionDocs(0.5);
    const accessBefore = accessRows(h);

    const again = await h.sync({ full: true });
    expect(again.outcome).toBe("partial");
    expect(again.counts.held_revocations).toBeGreaterThan(approved);
    expect(accessRows(h)).toEqual(accessBefore);
    const [pass] = (await json<HistoryJson>(["history"])).passes;
    expect(pass?.sweep_approval).toMatchObject({ pairs: 1, up_to: approved, used: 0 });
    const [sweep] = (await json<ProblemsJson>(["problems"])).problems.filter((p) => p.kind === "held_sweep");
    expect(sweep?.count).toBe(again.counts.held_revocations);
    expect(Date.parse(sweep?.last_seen_at ?? "")).toBeGreaterThan(Date.parse(sweep?.first_seen_at ?? ""));

    // The approval was used up by that pass: a new one covers the larger sweep.
    expect((await json<ApprovalJson>(["approve-sweep", "--mirror", "main"])).up_to).toBe(
      again.counts.held_revocations,
    );
    expect((await h.sync({ full: true })).outcome).toBe("succeeded");
  });

  it("holds the sweep of a pair the approval does not name", async () => {
    const { u1, others, approvedRows } = await approveAllButUser1();

    // This time user1's source succeeds: its sweep is as large, but nobody approved it.
    const next = await h.sync({ full: true });
    expect(next.outcome).toBe("partial");
    expect(next.counts.access_revoked).toBe(approvedRows);
    const sweeps = (await json<ProblemsJson>(["problems"])).problems.filter((p) => p.kind === "held_sweep");
    expect(sweeps.map((p) => p.user_email)).toEqual([u1]);
    for (const user of others) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
  });

  it("leaves a pair's approval pending while its source fails, for the next full pass that sweeps it", async () => {
    h = await createHarness({ sim: { docs: 80 } });
    await h.sync();
    removeNotionDocs(1);
    await h.sync({ full: true });
    const [u1, ...others] = h.sim.users as [string, ...string[]];
    expect(others.length).toBeGreaterThan(0);
    const heldOf = async () =>
      (await json<ProblemsJson>(["problems"])).problems.filter((p) => p.kind === "held_sweep");
    const u1Rows = (await heldOf()).find((p) => p.user_email === u1)?.count ?? 0;
    const approval = await json<ApprovalJson>(["approve-sweep", "--mirror", "main"]);
    expect(approval.pairs).toBe(h.sim.users.length);

    h.sim.setOutcome({ user: u1, server_instance_id: notionOf(h) }, { task: "FAILED", times: 1 });
    const failed = await h.sync({ full: true });
    expect(failed.counts.access_revoked).toBe(approval.up_to - u1Rows);
    for (const user of others) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
    const history = await json<HistoryJson>(["history"]);
    expect(history.passes[0]?.sweep_approval).toMatchObject({
      pairs: others.length,
      up_to: approval.up_to - u1Rows,
      used: approval.up_to - u1Rows,
    });
    expect(history.pending_sweep_approvals).toEqual([
      { mirror: "main", pairs: 1, up_to: u1Rows, by: approval.by, at: approval.at },
    ]);
    expect((await heldOf()).map((p) => p.user_email)).toEqual([u1]);

    const applied = await h.cli(["sync", "--full", "--json"]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(JSON.parse(applied.stdout).mirrors[0].counts).toMatchObject({
      access_revoked: u1Rows,
      held_revocations: 0,
    });
    expect(visibleKeys(h, u1)).toEqual(expectedKeys(h.sim, u1));
    const after = await json<HistoryJson>(["history"]);
    expect(after.pending_sweep_approvals).toEqual([]);
    expect(after.passes[0]?.sweep_approval).toMatchObject({ pairs: 1, up_to: u1Rows, used: u1Rows });
    expect(await heldOf()).toEqual([]);
  });

  it("sync --full --dry-run counts a pending approval as the next full pass would, and leaves it pending", async () => {
    const { u1 } = await approveAllButUser1();
    const notion = notionOf(h);
    const pending = (await json<ProblemsJson>(["problems"])).pending_sweep_approvals;

    // The approved pairs would be applied; user1's, which nobody approved, would be held (exit 1).
    const dry = await h.cli(["sync", "--full", "--dry-run", "--json"]);
    expect(dry.code, dry.stderr).toBe(1);
    const held = JSON.parse(dry.stdout).mirrors[0].dry_run.held_sweeps;
    expect(held).toEqual([
      expect.objectContaining({
        user_email: u1,
        server_instance_id: notion,
        would_revoke: expect.any(Number),
      }),
    ]);
    expect((await json<ProblemsJson>(["problems"])).pending_sweep_approvals).toEqual(pending);
    const next = await h.sync({ full: true });
    expect(next.counts).toMatchObject({ sweeps_held: 1, held_revocations: held[0].would_revoke });
  });

  it("exits 1 and approves nothing when nothing is held; 2 for bad usage", async () => {
    h = await createHarness({ sim: { docs: 10 } });
    const before = await h.cli(["approve-sweep", "--mirror", "main"]);
    expect(before.code, "before any pass: no database yet").toBe(1);
    await h.sync();
    const none = await h.cli(["approve-sweep", "--mirror", "main"]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/no held sweep .*nothing was approved/);
    const noneJson = await h.cli(["approve-sweep", "--mirror", "main", "--json"]);
    expect(noneJson.code).toBe(1);
    expect(JSON.parse(noneJson.stdout)).toEqual({
      error: { code: "NOTHING_HELD", message: none.stderr.trim().replace(/^syncmirror: /, "") },
    });
    expect((await json<ProblemsJson>(["problems"])).pending_sweep_approvals).toEqual([]);
    for (const bad of [[], ["--mirror", "nope"], ["--mirror", "main", "--full"]]) {
      const r = await h.cli(["approve-sweep", ...bad, "--json"]);
      expect(r.code, bad.join(" ")).toBe(2);
      expect(r.stderr).toMatch(/--mirror|--full/);
      expect(r.stdout).toBe("");
    }
  });
});
