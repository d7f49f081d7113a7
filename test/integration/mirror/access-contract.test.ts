/**
 * docs/reference/sync-semantics.md (full sweeps and the mass-delete guard, users who left, resources
 * no pair of any mirror can see), driven from outside: the built CLI against the simulator, read through the
 * public tables and the CLI's JSON.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { MirrorSummary } from "../../../src/sync/summary.js";
import { changes, lastSeq, pickDoc, pickDocs, resourceRow, TOMBSTONE } from "../../helpers/mirror-db.js";
import { createHarness, expectedKeys, type Harness } from "../../helpers/mirror-harness.js";
import { replaceSyncConfig } from "../../helpers/simulator.js";
import { buildOnce, editConfig } from "../daemon/setup.js";

let h: Harness;
beforeAll(buildOnce);
afterEach(async () => {
  await h?.close();
});

const [U1, U2, U3] = ["user1@example.com", "user2@example.com", "user3@example.com"];

/** Live keys `user` can see through mirror `mirror`. */
function visible(mirror: string, user: string): string[] {
  return h
    .query<{ key: string }>(
      `SELECT a.key FROM resource_access a JOIN resources r ON r.key = a.key
       WHERE a.mirror = ? AND a.user_email = ? AND r.deleted_at IS NULL ORDER BY a.key`,
      mirror,
      user,
    )
    .map((r) => r.key);
}

/** `syncmirror sync ... --json`: the exit code and the named mirror's summary. */
async function sync(
  args: string[],
  mirror = "main",
): Promise<{ code: number | null; summary: MirrorSummary }> {
  const r = await h.cli(["sync", ...args, "--json"]);
  expect(r.stdout, r.stderr).not.toBe("");
  const summary = JSON.parse(r.stdout).mirrors.find((m: { mirror: string }) => m.mirror === mirror);
  return { code: r.code, summary };
}

const notionOf = () => h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id ?? "";

/** A harness whose mirror `main` is a new explicit sync config of `users`, after a first `sync` (exit 0); the config's id. */
async function explicitMirror(
  users: string[],
  options: { docs?: number; other?: string[] } = {},
): Promise<string> {
  const mirror: Record<string, unknown> = {};
  h = await createHarness({ sim: { docs: options.docs ?? 40 }, mirror });
  const id = h.sim.configs.create({ name: "main", userEmails: users });
  mirror.sync_config_id = id;
  h.writeConfig();
  if (options.other) addOtherMirror(options.other);
  expect((await h.cli(["sync"])).code).toBe(0);
  return id;
}

/** Every access check from now on answers 503. */
const failAccessCheck = () =>
  h.sim.faults.inject("GET /sync-configs/{id}/access", {
    kind: "503",
    retryAfterSeconds: 0,
    times: Infinity,
  });

/** Adds a second mirror `other` over a new sync config of `users` (all servers). */
function addOtherMirror(users: string[]): string {
  const id = h.sim.configs.create({ name: "other", userEmails: users });
  editConfig(h, (config) => {
    (config.mirrors as unknown[]).push({ name: "other", sync_config_id: id });
  });
  return id;
}

describe("a resource no pair of any mirror can see", () => {
  it("stays live while another mirror's pair sees it, and is tombstoned once the last one loses it", async () => {
    await explicitMirror([U1], { docs: 30, other: [U2] });
    const doc = pickDoc(h, (d) => d.visibleTo.includes(U1) && d.visibleTo.includes(U2));
    expect(visible("main", U1)).toContain(doc.key);
    expect(visible("other", U2)).toContain(doc.key);

    h.sim.docs.setVisibility(
      doc.docId,
      doc.visibleTo.filter((u) => u !== U1),
    );
    const before = lastSeq(h);
    const first = await sync(["--full", "--mirror", "main"]);
    expect(first.code).toBe(0);
    expect(visible("main", U1)).not.toContain(doc.key);
    expect(visible("other", U2)).toContain(doc.key);
    expect(resourceRow(h, doc.key)?.deleted_at).toBeNull();
    expect(changes(h, before).filter((c) => c.key === doc.key)).toEqual([
      expect.objectContaining({ op: "access" }),
    ]);

    // Still visible upstream to a user no mirror syncs: for the mirror, nobody can see it.
    h.sim.docs.setVisibility(doc.docId, doc.visibleTo.filter((u) => u !== U1 && u !== U2).concat(U3));
    const mid = lastSeq(h);
    const second = await sync(["--full", "--mirror", "other"], "other");
    expect(second.code).toBe(0);
    expect(resourceRow(h, doc.key)).toMatchObject(TOMBSTONE);
    expect(changes(h, mid).filter((c) => c.key === doc.key)).toEqual([
      expect.objectContaining({ op: "delete" }),
    ]);
    expect(h.query("SELECT count(*) AS n FROM resource_access WHERE key = ?", doc.key)).toEqual([{ n: 0 }]);
  });

  it("takes a user dropped from one mirror's config out of that mirror only, keeping what another mirror grants live", async () => {
    const mainConfig = await explicitMirror([U1, U2], { other: [U1] });
    const inOther = visible("other", U1);
    expect(visible("main", U1)).toEqual(inOther);
    expect(inOther.length).toBeGreaterThan(10);

    await replaceSyncConfig(h.sim, mainConfig, { user_emails: [U2] });

    const before = lastSeq(h);
    const full = await sync(["--full", "--mirror", "main"]);
    expect(full.code).toBe(0);
    expect(full.summary).toMatchObject({ outcome: "succeeded" });
    expect(visible("main", U1)).toEqual([]);
    expect(visible("other", U1)).toEqual(inOther);
    expect(visible("main", U2)).toEqual(expectedKeys(h.sim, U2));
    expect(h.query("SELECT key FROM resources WHERE deleted_at IS NOT NULL")).toEqual([]);
    expect(changes(h, before).filter((c) => c.op === "delete")).toEqual([]);
  });
});

describe("the mass-delete guard's bounds", () => {
  /** One mirror of U1 on the notion server, where U1 sees exactly `n` documents. */
  async function onePair(n: number): Promise<string[]> {
    const mirror: Record<string, unknown> = {};
    h = await createHarness({ sim: { docs: 80 }, mirror });
    const notion = notionOf();
    mirror.sync_config_id = h.sim.configs.create({ name: "u1", userEmails: [U1], serverIds: [notion] });
    h.writeConfig();
    const docs = pickDocs(h, 0, (d) => d.server_instance_id === notion);
    expect(docs.length).toBeGreaterThanOrEqual(n);
    for (const [i, d] of docs.entries())
      h.sim.docs.setVisibility(
        d.docId,
        i < n ? [...new Set([...d.visibleTo, U1])] : d.visibleTo.filter((u) => u !== U1),
      );
    expect((await h.cli(["sync", "--full"])).code).toBe(0);
    const keys = visible("main", U1);
    expect(keys).toHaveLength(n);
    return docs.slice(0, n).map((d) => d.docId);
  }

  it("applies a sweep of exactly max_delete_fraction of a pair's keys (the guard holds only more than it)", async () => {
    const docIds = await onePair(24);
    for (const id of docIds.slice(0, 12)) h.sim.docs.remove(id);
    const full = await sync(["--full"]);
    expect(full.code, JSON.stringify(full.summary)).toBe(0);
    expect(full.summary).toMatchObject({ outcome: "succeeded", counts: { access_revoked: 12, deleted: 12 } });
    expect(visible("main", U1)).toHaveLength(12);
  });

  it("holds a sweep of 11 keys over the fraction: nothing revoked, exit 1, shown in status, until --allow-mass-delete", async () => {
    const docIds = await onePair(20);
    const before = visible("main", U1);
    for (const id of docIds.slice(0, 11)) h.sim.docs.remove(id);
    const held = await sync(["--full"]);
    expect(held.code).toBe(1);
    expect(held.summary).toMatchObject({ outcome: "partial", counts: { access_revoked: 0, deleted: 0 } });
    expect(visible("main", U1)).toEqual(before);
    const status = await h.cli(["status", "--json"]);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout).mirrors[0].held_revocations).toBe(11);
    const text = await h.cli(["status"]);
    expect(text.stdout).toMatch(/held revocations:\s+11\b/);

    const applied = await sync(["--full", "--allow-mass-delete"]);
    expect(applied.code).toBe(0);
    expect(applied.summary).toMatchObject({
      outcome: "succeeded",
      counts: { access_revoked: 11, deleted: 11 },
    });
    expect(visible("main", U1)).toHaveLength(9);
  });
});

describe("users who left, in a pass whose sweep is held", () => {
  it("still takes the leaver's access while another pair's mass revocation is held", async () => {
    h = await createHarness({ sim: { docs: 80 } });
    expect((await h.cli(["sync"])).code).toBe(0);
    const notion = notionOf();
    const leaverKeys = visible("main", U3);
    expect(leaverKeys.length).toBeGreaterThan(10);
    const notionRows = () =>
      h.query(
        "SELECT user_email, key FROM resource_access WHERE mirror = 'main' AND user_email <> ? AND key LIKE ?",
        U3,
        `notion:%`,
      );
    const notionBefore = notionRows();
    h.sim.people.leaveProject(U3);
    for (const d of pickDocs(h, 0, (d) => d.server_instance_id === notion)) h.sim.docs.remove(d.docId);

    const full = await sync(["--full"]);
    expect(full.code).toBe(1);
    expect(full.summary.outcome).toBe("partial");
    expect(visible("main", U3)).toEqual([]);
    expect(notionRows()).toEqual(notionBefore);
  });
});

describe("pairs skipped as not_syncable", () => {
  it("keep access within the grace, and lose it at the first full after it (not at an incremental), unheld", async () => {
    h = await createHarness({ sim: { docs: 40 } });
    expect((await h.cli(["sync"])).code).toBe(0);
    const notion = notionOf();
    const onNotion = (user: string) => visible("main", user).filter((k) => k.startsWith(`notion:${notion}:`));
    const before = Object.fromEntries(h.sim.users.map((u) => [u, onNotion(u)]));
    expect(Object.values(before).flat().length).toBeGreaterThan(10);
    h.sim.configs.setServerAvailable(h.sim.syncConfigId, notion, false);

    h.sim.clock.advance(24 * 3_600_000);
    const within = await sync(["--full"]);
    expect(within.code, JSON.stringify(within.summary)).toBe(0);
    expect(within.summary).toMatchObject({
      outcome: "succeeded",
      skipped: { not_syncable: h.sim.users.length },
    });
    for (const u of h.sim.users) expect(onNotion(u)).toEqual(before[u]);

    h.sim.clock.advance(49 * 3_600_000);
    const incremental = await sync([]);
    expect(incremental.code).toBe(0);
    expect(incremental.summary.mode).toBe("incremental");
    for (const u of h.sim.users) expect(onNotion(u)).toEqual(before[u]);

    const after = await sync(["--full"]);
    expect(after.code, JSON.stringify(after.summary)).toBe(0);
    expect(after.summary).toMatchObject({ outcome: "succeeded", counts: { held_revocations: 0 } });
    for (const u of h.sim.users) expect(onNotion(u)).toEqual([]);
    const notionLive = h.query<{ n: number }>(
      "SELECT count(*) AS n FROM resources WHERE key LIKE ? AND deleted_at IS NULL",
      `notion:${notion}:%`,
    );
    expect(notionLive).toEqual([{ n: 0 }]);
  });
});

describe("the access check decides who left", () => {
  it("after an adopted trigger: a leaver loses access; when the check fails, nobody does and the pass is partial", async () => {
    await explicitMirror([U1, U2, U3]);
    const held = visible("main", U2);
    expect(held.length).toBeGreaterThan(0);
    h.sim.people.leaveProject(U2);

    h.sim.faults.inject("POST /sync-task", { kind: "drop-after" });
    failAccessCheck();
    const failed = await sync(["--full"]);
    expect(failed.code).toBe(1);
    expect(failed.summary).toMatchObject({ outcome: "partial", adopted: true });
    expect(visible("main", U2)).toEqual(held);

    h.sim.faults.clear();
    h.sim.faults.inject("POST /sync-task", { kind: "drop-after" });
    const ok = await sync(["--full"]);
    expect(ok.code, JSON.stringify(ok.summary)).toBe(0);
    expect(ok.summary).toMatchObject({ outcome: "succeeded", adopted: true });
    expect(visible("main", U2)).toEqual([]);
    for (const u of [U1, U3]) expect(visible("main", u)).toEqual(expectedKeys(h.sim, u));
  });
});

describe("a held sweep, later", () => {
  /** 80 documents, one full pass, then U1 loses sight of every notion document it saw: U1's notion pair is held. */
  async function heldPair(): Promise<{ hidden: { docId: string; visibleTo: string[] }[]; before: string[] }> {
    h = await createHarness({ sim: { docs: 80 } });
    expect((await h.cli(["sync", "--full"])).code).toBe(0);
    const notion = notionOf();
    const hidden = pickDocs(h, 0, (d) => d.server_instance_id === notion && d.visibleTo.includes(U1));
    expect(hidden.length).toBeGreaterThan(10);
    const before = visible("main", U1);
    for (const d of hidden)
      h.sim.docs.setVisibility(
        d.docId,
        d.visibleTo.filter((u) => u !== U1),
      );
    const held = await sync(["--full"]);
    expect(held.code).toBe(1);
    expect(held.summary.outcome).toBe("partial");
    expect(visible("main", U1)).toEqual(before);
    return { hidden, before };
  }

  it("is no longer held, shown or a problem once a full pass sees the keys again", async () => {
    const { hidden, before } = await heldPair();
    for (const d of hidden) h.sim.docs.setVisibility(d.docId, d.visibleTo);
    const full = await sync(["--full"]);
    expect(full.code, JSON.stringify(full.summary)).toBe(0);
    expect(full.summary).toMatchObject({
      outcome: "succeeded",
      counts: { access_revoked: 0, held_revocations: 0 },
    });
    expect(visible("main", U1)).toEqual(before);
    expect(JSON.parse((await h.cli(["status", "--json"])).stdout).mirrors[0].held_revocations).toBe(0);
    const problems = JSON.parse((await h.cli(["problems", "--json"])).stdout);
    expect(problems.problems).toEqual([]);
    expect((await h.cli(["approve-sweep", "--mirror", "main"])).code).toBe(1);
  });

  it("keeps an approval through an incremental pass, for the next full pass to apply once", async () => {
    const { hidden } = await heldPair();
    const approve = await h.cli(["approve-sweep", "--mirror", "main"]);
    expect(approve.code, approve.stderr).toBe(0);
    const incremental = await sync([]);
    expect(incremental.summary.mode).toBe("incremental");
    expect(visible("main", U1).length).toBeGreaterThan(0);

    const full = await sync(["--full"]);
    expect(full.code, JSON.stringify(full.summary)).toBe(0);
    expect(full.summary.counts.access_revoked).toBe(hidden.length);
    expect(visible("main", U1)).toEqual(expectedKeys(h.sim, U1));

    // One-shot: the next mass revocation is held again.
    const github = h.sim.servers.find((s) => s.source_type === "github")?.server_instance_id ?? "";
    const more = pickDocs(h, 0, (d) => d.server_instance_id === github && d.visibleTo.includes(U1));
    expect(more.length).toBeGreaterThan(10);
    for (const d of more)
      h.sim.docs.setVisibility(
        d.docId,
        d.visibleTo.filter((u) => u !== U1),
      );
    const again = await sync(["--full"]);
    expect(again.code).toBe(1);
    expect(again.summary.counts.access_revoked).toBe(0);
  });

  it("is logged as a warning naming the mirror", async () => {
    await heldPair();
    const r = await h.cli(["sync", "--full"]);
    expect(r.code).toBe(1);
    const lines = r.stderr
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as { level: number; msg: string; mirror?: string });
    expect(lines.some((l) => l.level >= 40 && /held|mass-delete/i.test(l.msg))).toBe(true);
  });
});

describe("a user who left the project, with two mirrors", () => {
  it("keeps resources live until the last mirror granting them has had its full pass", async () => {
    await explicitMirror([U1, U2], { other: [U1, U3] });
    const onlyU1 = pickDoc(
      h,
      (d) => d.visibleTo.includes(U1) && !d.visibleTo.includes(U2) && !d.visibleTo.includes(U3),
    );
    h.sim.people.leaveProject(U1);

    const main = await sync(["--full", "--mirror", "main"]);
    expect(main.code, JSON.stringify(main.summary)).toBe(0);
    expect(visible("main", U1)).toEqual([]);
    expect(visible("other", U1)).toContain(onlyU1.key);
    expect(resourceRow(h, onlyU1.key)?.deleted_at).toBeNull();

    const other = await sync(["--full", "--mirror", "other"], "other");
    expect(other.code, JSON.stringify(other.summary)).toBe(0);
    expect(visible("other", U1)).toEqual([]);
    expect(resourceRow(h, onlyU1.key)?.deleted_at).toEqual(expect.any(String));
  });
});

describe("leaving and grace in a pass where another source fails", () => {
  it("takes a leaver's access and a pair's past its grace even when the full pass ends partial", async () => {
    await explicitMirror([U1, U2, U3]);
    const notion = notionOf();
    const github = h.sim.servers.find((s) => s.source_type === "github")?.server_instance_id ?? "";
    const onNotion = (user: string) => visible("main", user).filter((k) => k.startsWith(`notion:${notion}:`));
    expect(onNotion(U1).length).toBeGreaterThan(0);
    expect(visible("main", U2).length).toBeGreaterThan(0);
    h.sim.people.setAuth(U1, notion, "not_authenticated");
    h.sim.people.leaveProject(U2);
    h.sim.clock.advance(73 * 3_600_000);
    // Skipped pairs are reported, they do not change the outcome.
    expect((await sync([])).code).toBe(0);
    h.sim.setOutcome({ user: U3, server_instance_id: github }, { task: "FAILED" });

    const full = await sync(["--full"]);
    expect(full.code).toBe(1);
    expect(full.summary.outcome).toBe("partial");
    expect(visible("main", U2)).toEqual([]);
    expect(onNotion(U1)).toEqual([]);
  });

  it("keeps everything of a user who left and came back before the full pass", async () => {
    h = await createHarness({ sim: { docs: 40 } });
    expect((await h.cli(["sync"])).code).toBe(0);
    const before = visible("main", U3);
    h.sim.people.leaveProject(U3);
    expect((await sync([])).code).toBe(0);
    h.sim.people.joinProject(U3);
    const full = await sync(["--full"]);
    expect(full.code, JSON.stringify(full.summary)).toBe(0);
    expect(visible("main", U3)).toEqual(before);
  });
});

describe("a mirror whose every user left the project", () => {
  it.each([
    ["an explicit config", true],
    ["an all-users config", false],
  ])(
    "takes their access at the next full pass though the service refuses the trigger (%s)",
    async (_, explicit) => {
      if (explicit) await explicitMirror([U1], { docs: 30 });
      else {
        h = await createHarness({ sim: { docs: 30 } });
        expect((await h.cli(["sync"])).code).toBe(0);
      }
      const users = explicit ? [U1] : h.sim.users;
      const held = users.reduce((n, u) => n + visible("main", u).length, 0);
      expect(held).toBeGreaterThan(10);
      for (const u of users) h.sim.people.leaveProject(u);

      // An incremental pass takes nothing: leaving is swept by a full pass.
      const incremental = await sync([]);
      expect(incremental.summary.outcome).toBe("refused");
      expect(users.reduce((n, u) => n + visible("main", u).length, 0)).toBe(held);

      const before = lastSeq(h);
      const full = await sync(["--full"]);
      expect(full.code).toBe(1);
      expect(full.summary).toMatchObject({ outcome: "refused", counts: { access_revoked: held } });
      for (const u of users) expect(visible("main", u)).toEqual([]);
      expect(h.query("SELECT count(*) AS n FROM resources WHERE deleted_at IS NULL")).toEqual([{ n: 0 }]);
      expect(changes(h, before).every((c) => c.op === "delete")).toBe(true);
    },
  );

  it("keeps their access when the access check fails too", async () => {
    await explicitMirror([U1], { docs: 30 });
    const held = visible("main", U1);
    h.sim.people.leaveProject(U1);
    failAccessCheck();
    const full = await sync(["--full"]);
    expect(full.code).toBe(1);
    expect(full.summary).toMatchObject({ outcome: "refused", counts: { access_revoked: 0 } });
    expect(visible("main", U1)).toEqual(held);
  });
});
