/** docs/reference/sync-semantics.md#full-snapshots-and-sweeps, docs/reference/sync-semantics.md#users-who-left-and-pairs-out-of-reach, resources nobody can see: who keeps access, and tombstones. */
import { afterEach, describe, expect, it } from "vitest";
import {
  accessRows,
  changes,
  lastSeq,
  pairOf,
  pairs,
  pickDoc,
  resourceRow,
  runCreatedAtMs,
  TOMBSTONE,
} from "../../helpers/mirror-db.js";
import { createHarness, expectedKeys, type Harness, visibleKeys } from "../../helpers/mirror-harness.js";
import { replaceSyncConfig } from "../../helpers/simulator.js";

let h: Harness;
afterEach(async () => {
  await h?.close();
});

const [U1, U2, U3] = ["user1@example.com", "user2@example.com", "user3@example.com"];

/** Edits an explicit sync config through the service's API (PUT), keeping what `changes` does not name. */
const editConfig = (id: string, changes: { server_instance_ids?: string[]; user_emails: string[] }) =>
  replaceSyncConfig(h.sim, id, changes);

describe("access to one document", () => {
  it("revokes access a user lost, keeps the document for others", async () => {
    h = await createHarness({ sim: { docs: 20 } });
    await h.sync();
    const doc = pickDoc(h, (d) => d.visibleTo.includes(U1) && d.visibleTo.includes(U2));
    h.sim.docs.setVisibility(
      doc.docId,
      doc.visibleTo.filter((u) => u !== U1),
    );
    const before = lastSeq(h);

    const s = await h.sync({ full: true });
    expect(s).toMatchObject({ outcome: "succeeded", counts: { access_revoked: 1, deleted: 0 } });
    expect(accessRows(h, doc.key).map((a) => a.user_email)).not.toContain(U1);
    expect(accessRows(h, doc.key).map((a) => a.user_email)).toContain(U2);
    expect(resourceRow(h, doc.key)?.deleted_at).toBeNull();
    expect(changes(h, before)).toEqual([expect.objectContaining({ key: doc.key, op: "access" })]);
  });

  it("tombstones a resource nobody can see, and brings it back as an upsert when it reappears", async () => {
    h = await createHarness({ sim: { docs: 20 } });
    await h.sync();
    const doc = pickDoc(h, (d) => d.visibleTo.length >= 2);
    h.sim.docs.setVisibility(doc.docId, []);
    const before = lastSeq(h);

    const gone = await h.sync({ full: true });
    expect(gone.counts).toMatchObject({ deleted: 1, access_revoked: doc.visibleTo.length });
    const tombstone = resourceRow(h, doc.key);
    expect(tombstone).toMatchObject(TOMBSTONE);
    expect(changes(h, before)).toEqual([expect.objectContaining({ key: doc.key, op: "delete" })]);

    h.sim.docs.setVisibility(doc.docId, [U3]);
    const mid = lastSeq(h);
    await h.sync({ full: true });
    expect(resourceRow(h, doc.key)).toMatchObject({
      deleted_at: null,
      content_hash: tombstone?.content_hash,
    });
    expect(accessRows(h, doc.key).map((a) => a.user_email)).toEqual([U3]);
    expect(changes(h, mid)).toEqual([expect.objectContaining({ key: doc.key, op: "upsert" })]);
  });
});

describe("users who left the project", () => {
  it("drops a user absent from an all-users trigger at the next full, without the guard", async () => {
    h = await createHarness({ sim: { docs: 40 } });
    await h.sync();
    const held = visibleKeys(h, U3);
    expect(held.length).toBeGreaterThan(10);
    h.sim.people.leaveProject(U3);

    const incremental = await h.sync();
    expect(incremental.mode).toBe("incremental");
    expect(
      h.sim.runs
        .list()
        .filter((r) => r.trigger_id === incremental.trigger_id)
        .map((r) => r.user_email),
    ).not.toContain(U3);
    expect(visibleKeys(h, U3)).toEqual(held);

    // A dry run announces what the real sweep then does.
    const dry = await h.sync({ full: true, dryRun: true });
    expect(dry.dry_run?.would_revoke).toBe(held.length);
    expect(visibleKeys(h, U3)).toEqual(held);
    const full = await h.sync({ full: true });
    expect(full.counts.access_revoked).toBe(held.length);
    expect(full.counts.deleted).toBe(dry.dry_run?.would_delete);
    expect(full).toMatchObject({ outcome: "succeeded", counts: { held_revocations: 0, sweeps_held: 0 } });
    expect(visibleKeys(h, U3)).toEqual([]);
    for (const user of [U1, U2]) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
    expect(h.query("SELECT DISTINCT retired_reason AS r FROM pairs WHERE user_email = ?", U3)).toEqual([
      { r: "left" },
    ]);
  });

  it("has a user who comes back in an incremental await a baseline, then regain everything at the next full", async () => {
    h = await createHarness({ sim: { docs: 40 } });
    await h.sync();
    h.sim.people.leaveProject(U3);
    await h.sync({ full: true });
    expect(visibleKeys(h, U3)).toEqual([]);

    h.sim.people.joinProject(U3);
    const back = await h.sync();
    expect(back).toMatchObject({ mode: "incremental", outcome: "succeeded" });
    // The incremental exported only what changed: U3's access comes back with the next full.
    expect(back.pairs_awaiting_baseline).toBe(h.sim.servers.length);
    for (const p of pairs(h).filter((p) => p.user_email === U3))
      expect(p).toMatchObject({ awaiting_baseline: 1, retired_reason: null });
    const full = await h.sync({ full: true });
    expect(full.pairs_awaiting_baseline).toBe(0);
    expect(visibleKeys(h, U3)).toEqual(expectedKeys(h.sim, U3));
  });

  it("drops a user an explicit config skips as not_a_project_user at the next full", async () => {
    const mirror: Record<string, unknown> = {};
    h = await createHarness({ sim: { docs: 40 }, mirror });
    mirror.sync_config_id = h.sim.configs.create({ userEmails: [U1, U2, U3] });
    h.writeConfig();
    await h.sync();
    expect(visibleKeys(h, U2).length).toBeGreaterThan(10);
    h.sim.people.leaveProject(U2);

    const full = await h.sync({ full: true });
    expect(full.skipped).toEqual({ not_a_project_user: h.sim.servers.length });
    expect(full).toMatchObject({ outcome: "succeeded", counts: { held_revocations: 0 } });
    expect(visibleKeys(h, U2)).toEqual([]);
    for (const user of [U1, U3]) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
  });
});

describe("a trigger answer without its skipped list or count", () => {
  async function explicitWithLeaver(): Promise<string[]> {
    const mirror: Record<string, unknown> = {};
    h = await createHarness({ sim: { docs: 40 }, mirror });
    mirror.sync_config_id = h.sim.configs.create({ userEmails: [U1, U2, U3] });
    h.writeConfig();
    await h.sync();
    const held = visibleKeys(h, U2);
    expect(held.length).toBeGreaterThan(10);
    h.sim.people.leaveProject(U2);
    return held;
  }

  it("takes a list shorter than the 100 the service lists as whole: no access check, the leaver loses access", async () => {
    await explicitWithLeaver();
    h.sim.faults.inject("POST /sync-task", { kind: "missing-field", field: "skipped_count" });
    h.sim.faults.inject("GET /sync-configs/{id}/access", {
      kind: "429",
      retryAfterSeconds: 0,
      times: Infinity,
    });
    const full = await h.sync({ full: true });
    expect(full, full.message).toMatchObject({ outcome: "succeeded", adopted: false });
    expect(full.skipped_total).toBe(h.sim.servers.length);
    expect(visibleKeys(h, U2)).toEqual([]);
  });

  it("keeps the answer's runs (nothing adopted) and asks the access check who left when the list is missing", async () => {
    const held = await explicitWithLeaver();
    h.sim.faults.inject("POST /sync-task", { kind: "missing-field", field: ["skipped", "skipped_count"] });
    const full = await h.sync({ full: true });
    expect(full, full.message).toMatchObject({ outcome: "succeeded", adopted: false, skipped_total: null });
    expect(held.length).toBeGreaterThan(0);
    expect(visibleKeys(h, U2)).toEqual([]);
    for (const user of [U1, U3]) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
  });

  it("ends partial and revokes nobody for leaving when the list is missing and the access check fails", async () => {
    const held = await explicitWithLeaver();
    h.sim.faults.inject("POST /sync-task", { kind: "missing-field", field: ["skipped", "skipped_count"] });
    h.sim.faults.inject("GET /sync-configs/{id}/access", {
      kind: "429",
      retryAfterSeconds: 0,
      times: Infinity,
    });
    const full = await h.sync({ full: true });
    expect(full).toMatchObject({ outcome: "partial", adopted: false });
    expect(visibleKeys(h, U2)).toEqual(held);
  });
});

describe("since once a pair is gone from the trigger", () => {
  /** Two incrementals after `leave`, 30 minutes apart: the second's since, and the first's runs' time. */
  async function twoIncrementals(
    leave: () => void | Promise<void>,
  ): Promise<{ since: number; firstMs: number }> {
    await h.sync();
    await leave();
    h.sim.clock.advance(30 * 60_000);
    const first = await h.sync();
    expect(first).toMatchObject({ mode: "incremental", outcome: "succeeded" });
    h.sim.clock.advance(30 * 60_000);
    const second = await h.sync();
    expect(second.mode).toBe("incremental");
    return { since: Date.parse(second.since ?? ""), firstMs: runCreatedAtMs(h, first.trigger_id) };
  }

  it("stops holding since back for a user absent from an all-users trigger, who keeps access until the next full", async () => {
    h = await createHarness({ sim: { docs: 30 }, defaults: { since_overlap_seconds: 60 } });
    let held: string[] = [];
    const { since, firstMs } = await twoIncrementals(() => {
      held = visibleKeys(h, U3);
      h.sim.people.leaveProject(U3);
    });
    expect(since).toBe(firstMs - 60_000);
    expect(visibleKeys(h, U3)).toEqual(held);
    await h.sync({ full: true });
    expect(visibleKeys(h, U3)).toEqual([]);
  });

  it("stops holding since back for a user an explicit config skips as not_a_project_user, still reported as skipped", async () => {
    const mirror: Record<string, unknown> = {};
    h = await createHarness({ sim: { docs: 30 }, mirror, defaults: { since_overlap_seconds: 60 } });
    mirror.sync_config_id = h.sim.configs.create({ userEmails: [U1, U2, U3] });
    h.writeConfig();
    const { since, firstMs } = await twoIncrementals(() => h.sim.people.leaveProject(U2));
    expect(since).toBe(firstMs - 60_000);
    const status = JSON.parse((await h.cli(["status", "--json"])).stdout).mirrors[0];
    expect(status.skipped_pairs).toEqual(
      h.sim.servers.map(() => expect.objectContaining({ user_email: U2, reason: "not_a_project_user" })),
    );
  });

  it("stops holding since back for a server removed from the sync config", async () => {
    const mirror: Record<string, unknown> = {};
    h = await createHarness({ sim: { docs: 30 }, mirror, defaults: { since_overlap_seconds: 60 } });
    const id = h.sim.configs.create({ userEmails: [U1, U2, U3] });
    mirror.sync_config_id = id;
    h.writeConfig();
    const kept = h.sim.configs.get(id).server_instance_ids.slice(0, 1);
    expect(kept).toHaveLength(1);
    const { since, firstMs } = await twoIncrementals(() =>
      editConfig(id, { server_instance_ids: kept, user_emails: [U1, U2, U3] }),
    );
    expect(since).toBe(firstMs - 60_000);
  });
});

describe("users who left before the mirror first saw them", () => {
  /** A mirror over an explicit config of all three users, none synced yet. */
  async function explicitMirror(userEmails: string[]): Promise<string> {
    const mirror: Record<string, unknown> = {};
    h = await createHarness({ sim: { docs: 20 }, mirror });
    const id = h.sim.configs.create({ userEmails });
    mirror.sync_config_id = id;
    h.writeConfig();
    return id;
  }

  /** pairs_awaiting_baseline as `sync --json`, `status --json` and the gauge say it. */
  async function awaitingEverywhere(summary: { pairs_awaiting_baseline: number }): Promise<number[]> {
    const status = await h.cli(["status", "--json"]);
    expect(status.code, status.stderr).toBe(0);
    const gauge = (await h.metrics.pairsAwaitingBaseline.get()).values.find(
      (v) => v.labels.mirror === "main",
    );
    return [
      summary.pairs_awaiting_baseline,
      JSON.parse(status.stdout).mirrors[0].pairs_awaiting_baseline,
      gauge?.value ?? -1,
    ];
  }

  it("retires a user's pairs the first full pass skips as not_a_project_user in that pass: none awaits a baseline", async () => {
    await explicitMirror([U1, U2, U3]);
    h.sim.people.leaveProject(U1);
    const full = await h.sync({ full: true });
    expect(full).toMatchObject({
      outcome: "succeeded",
      skipped: { not_a_project_user: h.sim.servers.length },
    });
    expect(await awaitingEverywhere(full)).toEqual([0, 0, 0]);
    const left = pairs(h).filter((p) => p.user_email === U1);
    expect(left).toHaveLength(h.sim.servers.length);
    for (const p of left)
      expect(p).toMatchObject({
        retired_reason: "left",
        skip_reason: "not_a_project_user",
      });
  });

  it("counts no pair first seen as not_a_project_user in an incremental pass as awaiting a baseline", async () => {
    const id = await explicitMirror([U2, U3]);
    expect((await h.sync()).pairs_awaiting_baseline).toBe(0);
    // U1 joins the config, then leaves the project: the incremental skips their pairs.
    await editConfig(id, { user_emails: [U1, U2, U3] });
    h.sim.people.leaveProject(U1);
    const incremental = await h.sync();
    expect(incremental).toMatchObject({
      mode: "incremental",
      skipped: { not_a_project_user: h.sim.servers.length },
    });
    expect(await awaitingEverywhere(incremental)).toEqual([0, 0, 0]);
    expect(pairs(h).filter((p) => p.user_email === U1)).toHaveLength(h.sim.servers.length);
    const full = await h.sync({ full: true });
    expect(await awaitingEverywhere(full)).toEqual([0, 0, 0]);
    for (const p of pairs(h).filter((p) => p.user_email === U1)) expect(p.retired_reason).toBe("left");
  });
});

describe("pairs skipped as not_accessible", () => {
  it("keeps access within inaccessible_grace_hours and loses it after", async () => {
    h = await createHarness({ sim: { docs: 40 } });
    await h.sync();
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id ?? "";
    const onNotion = (user: string) => visibleKeys(h, user).filter((k) => k.startsWith(`notion:${notion}:`));
    const held = onNotion(U1);
    expect(held.length).toBeGreaterThan(0);
    const watermark = pairOf(h, U1, notion)?.watermark;
    h.sim.people.setAuth(U1, notion, "not_authenticated");

    const within = await h.sync({ full: true });
    expect(within).toMatchObject({ outcome: "succeeded", skipped: { not_accessible: 1 } });
    expect(onNotion(U1)).toEqual(held);
    expect(pairOf(h, U1, notion)).toMatchObject({ watermark, skip_reason: "not_accessible" });

    h.sim.clock.advance(73 * 3_600_000);
    const dry = await h.sync({ full: true, dryRun: true });
    expect(dry.dry_run?.would_revoke).toBe(held.length);
    expect(onNotion(U1)).toEqual(held);
    const after = await h.sync({ full: true });
    expect(after.counts.access_revoked).toBe(held.length);
    expect(after).toMatchObject({ outcome: "succeeded", counts: { held_revocations: 0 } });
    expect(onNotion(U1)).toEqual([]);
    expect(pairOf(h, U1, notion)?.retired_reason).toBe("inaccessible");
    // The user's other server is untouched.
    expect(visibleKeys(h, U1).length).toBe(expectedKeys(h.sim, U1).filter((k) => !k.includes(notion)).length);
  });
});

describe("more than 100 skipped pairs", () => {
  // 51 leavers x 2 servers = 102 skipped pairs: the trigger lists only 100 of them.
  const users = Array.from({ length: 55 }, (_, i) => `user${i + 1}@example.com`);
  let configId = "";
  const createExplicit = async () => {
    const mirror: Record<string, unknown> = {};
    h = await createHarness({ sim: { docs: 10, users: users.length }, mirror });
    configId = h.sim.configs.create({ userEmails: users });
    mirror.sync_config_id = configId;
    h.writeConfig();
    await h.sync();
    const leavers = users.slice(0, 51);
    for (const u of leavers) h.sim.people.leaveProject(u);
    return leavers;
  };

  it("asks the access check who left when the trigger lists only the first 100", async () => {
    const leavers = await createExplicit();
    const full = await h.sync({ full: true });
    expect(full).toMatchObject({
      outcome: "succeeded",
      skipped_total: 102,
      skipped: { not_a_project_user: 100 },
    });
    expect(h.sim.requests.filter((r) => r.route === "/sync-configs/{id}/access").length).toBeGreaterThan(0);
    for (const u of leavers) expect(visibleKeys(h, u)).toEqual([]);
    for (const u of users.slice(51)) expect(visibleKeys(h, u)).toEqual(expectedKeys(h.sim, u));
  });

  it("reports a pair skipped as not_accessible that only the access check shows, and keeps its access", async () => {
    await createExplicit();
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id ?? "";
    const locked = users[54] ?? "";
    const held = visibleKeys(h, locked);
    h.sim.people.setAuth(locked, notion, "not_authenticated");
    const full = await h.sync({ full: true });
    expect(full).toMatchObject({ skipped_total: 103, skipped: { not_a_project_user: 100 } });
    expect(visibleKeys(h, locked)).toEqual(held);
    const status = JSON.parse((await h.cli(["status", "--json"])).stdout).mirrors[0];
    expect(status.skipped_pairs).toEqual([
      expect.objectContaining({ user_email: locked, server_instance_id: notion, reason: "not_accessible" }),
    ]);
    const problems = JSON.parse((await h.cli(["problems", "--json"])).stdout);
    expect(JSON.stringify(problems)).toContain("not_accessible (not_authenticated)");
  });

  it("takes the access of a server removed from the sync config, as the access check no longer lists it", async () => {
    // 101 leavers on the one server left in the config: the trigger lists only 100 of them.
    const many = Array.from({ length: 105 }, (_, i) => `user${i + 1}@example.com`);
    const mirror: Record<string, unknown> = {};
    h = await createHarness({ sim: { docs: 10, users: many.length }, mirror });
    const id = h.sim.configs.create({ userEmails: many });
    mirror.sync_config_id = id;
    h.writeConfig();
    await h.sync();
    const [notion = "", github = ""] = ["notion", "github"].map(
      (type) => h.sim.servers.find((s) => s.source_type === type)?.server_instance_id ?? "",
    );
    const stays = many[104] ?? "";
    const onNotion = () => visibleKeys(h, stays).filter((k) => k.startsWith(`notion:${notion}:`));
    expect(onNotion().length).toBeGreaterThan(0);
    await editConfig(id, { server_instance_ids: [github], user_emails: many });
    for (const u of many.slice(0, 101)) h.sim.people.leaveProject(u);
    const full = await h.sync({ full: true });
    expect(full).toMatchObject({ skipped_total: 101, skipped: { not_a_project_user: 100 } });
    expect(onNotion()).toEqual([]);
    expect(pairOf(h, stays, notion)?.retired_reason).toBe("removed");
    expect(visibleKeys(h, stays).length).toBeGreaterThan(0);
  });

  it("counts the grace of a pair only the access check shows skipped from the service's clock, as a listed one's", async () => {
    // Skipped from the mirror's first pass on, and past the first 100 listed: the mirror first
    // sees it in the access check. The service's clock runs months behind this machine's.
    const mirror: Record<string, unknown> = {};
    h = await createHarness({ sim: { docs: 10, users: users.length }, mirror });
    mirror.sync_config_id = h.sim.configs.create({ userEmails: users });
    h.writeConfig();
    for (const u of users.slice(0, 51)) h.sim.people.leaveProject(u);
    const locked = users[54] ?? "";
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id ?? "";
    h.sim.people.setAuth(locked, notion, "not_authenticated");
    const first = await h.sync({ full: true });
    expect(first).toMatchObject({ skipped_total: 103, skipped: { not_a_project_user: 100 } });
    expect(pairOf(h, locked, notion)).toMatchObject({ skip_reason: "not_accessible", retired_reason: null });
    expect(first.pairs_awaiting_baseline).toBe(1);

    h.sim.clock.advance(73 * 3_600_000);
    const later = await h.sync({ full: true });
    expect(pairOf(h, locked, notion)?.retired_reason).toBe("inaccessible");
    expect(later.pairs_awaiting_baseline).toBe(0);
  });

  it("when the access check fails, still takes the access of a listed pair past its grace (fail closed)", async () => {
    const mirror: Record<string, unknown> = {};
    h = await createHarness({ sim: { docs: 10, users: users.length }, mirror });
    mirror.sync_config_id = h.sim.configs.create({ userEmails: users });
    h.writeConfig();
    await h.sync();
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id ?? "";
    const [locked = "", ...rest] = users;
    const onNotion = () => visibleKeys(h, locked).filter((k) => k.startsWith(`notion:${notion}:`));
    expect(onNotion().length).toBeGreaterThan(0);
    h.sim.people.setAuth(locked, notion, "not_authenticated");
    const leavers = rest.slice(0, 51);
    for (const u of leavers) h.sim.people.leaveProject(u);
    const before = leavers.map((u) => visibleKeys(h, u));
    h.sim.clock.advance(73 * 3_600_000);
    h.sim.faults.inject("GET /sync-configs/{id}/access", {
      kind: "429",
      retryAfterSeconds: 0,
      times: Infinity,
    });
    const full = await h.sync({ full: true });
    expect(full).toMatchObject({ outcome: "partial", skipped: { not_accessible: 1 } });
    expect(onNotion()).toEqual([]);
    expect(pairOf(h, locked, notion)?.retired_reason).toBe("inaccessible");
    expect(leavers.map((u) => visibleKeys(h, u))).toEqual(before);
  });

  it("never reads a trigger answer without skipped_count as a complete list: a locked user past the first 100 keeps access", async () => {
    await createExplicit();
    const locked = users[54] ?? "";
    const held = visibleKeys(h, locked);
    expect(held.length).toBeGreaterThan(0);
    for (const s of h.sim.servers) h.sim.people.setAuth(locked, s.server_instance_id, "not_authenticated");
    h.sim.faults.inject("POST /sync-task", { kind: "missing-field", field: "skipped_count" });
    const full = await h.sync({ full: true });
    expect(full.outcome, full.message).toBe("succeeded");
    expect(visibleKeys(h, locked)).toEqual(held);
    expect(visibleKeys(h, users[50] ?? "")).toEqual([]);
  });

  it("refuses an access check whose users come without servers: nobody loses access as removed from the config", async () => {
    const leavers = await createExplicit();
    const locked = users[54] ?? "";
    for (const s of h.sim.servers) h.sim.people.setAuth(locked, s.server_instance_id, "not_authenticated");
    const before = [locked, ...leavers].map((u) => visibleKeys(h, u));
    expect(before[0]?.length).toBeGreaterThan(0);
    h.sim.faults.inject("GET /sync-configs/{id}/access", {
      kind: "missing-field",
      field: "items.*.servers",
      times: Infinity,
    });
    const full = await h.sync({ full: true });
    expect(full.outcome).toBe("partial");
    expect(full.message).toMatch(/access check failed/);
    expect([locked, ...leavers].map((u) => visibleKeys(h, u))).toEqual(before);
  });

  it("refuses an access check page whose meta says nothing of further pages: members past it keep access", async () => {
    const leavers = await createExplicit();
    const stay = users.slice(51);
    const before = stay.map((u) => visibleKeys(h, u));
    h.sim.faults.inject("GET /sync-configs/{id}/access", {
      kind: "missing-field",
      field: ["meta.next_cursor", "meta.has_next"],
      times: Infinity,
    });
    const full = await h.sync({ full: true });
    expect(full.outcome).toBe("partial");
    expect(full.message).toMatch(/access check failed/);
    expect(stay.map((u) => visibleKeys(h, u))).toEqual(before);
    expect(leavers.map((u) => visibleKeys(h, u)).every((keys) => keys.length > 0)).toBe(true);
  });

  it("revokes nobody for leaving and ends partial when the access check fails", async () => {
    const leavers = await createExplicit();
    const before = leavers.map((u) => visibleKeys(h, u));
    h.sim.faults.inject("GET /sync-configs/{id}/access", {
      kind: "429",
      retryAfterSeconds: 0,
      times: Infinity,
    });
    const full = await h.sync({ full: true });
    expect(full.outcome).toBe("partial");
    expect(full.message).toMatch(/access check failed/);
    expect(leavers.map((u) => visibleKeys(h, u))).toEqual(before);
    // Kept with the pass's errors, the history's too, in the service's answer's words.
    const checkErrors = full.errors.filter((e) => e.error.startsWith("the access check failed"));
    expect(checkErrors).toEqual([
      expect.objectContaining({
        sync_id: null,
        user_email: null,
        error: expect.stringMatching(
          /^the access check failed \(.*429.*\): users who left keep their access/,
        ),
      }),
    ]);
  });
});
