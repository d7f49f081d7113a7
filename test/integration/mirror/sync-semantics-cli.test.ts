/**
 * SPEC "Sync semantics" and the `sync` command, black-box: every pass goes through the built CLI
 * (`syncmirror sync --json`, `npm run build` first) against the simulator, and every assertion reads
 * the printed summary or the public tables (`resources`, `resource_access`, `changes`).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { spawnCli, until } from "../../helpers/daemon.js";
import {
  accessRows,
  changes,
  lastSeq,
  pickDoc,
  pickDocs,
  resourceRow,
  runCreatedAtMs,
} from "../../helpers/mirror-db.js";
import { createHarness, expectedKeys, type Harness, visibleKeys } from "../../helpers/mirror-harness.js";
import { startRewritingProxy } from "../../helpers/rewriting-proxy.js";

let h: Harness;
afterEach(async () => {
  await h?.close();
});

const U1 = "user1@example.com";
const U2 = "user2@example.com";
const U3 = "user3@example.com";

// biome-ignore lint/suspicious/noExplicitAny: the printed summary is read loosely, shapes are asserted
type Json = any;

/** `syncmirror sync --json ...args`: the exit code and the one JSON object it printed. */
async function sync(...args: string[]): Promise<{ code: number | null; out: Json; mirror: Json }> {
  return syncWith({}, ...args);
}

async function syncWith(
  env: Record<string, string>,
  ...args: string[]
): Promise<{ code: number | null; out: Json; mirror: Json }> {
  const r = await h.cli(["sync", "--json", ...args], env);
  expect(r.code, r.stderr).not.toBe(2);
  const out = JSON.parse(r.stdout);
  return { code: r.code, out, mirror: out.mirrors[0] };
}

/** Replaces the harness config's mirrors (`main` keeps its sync config unless given). */
function setMirrors(mirrors: Record<string, unknown>[]): void {
  const config = parse(readFileSync(h.configPath, "utf8"));
  config.mirrors = mirrors;
  writeFileSync(h.configPath, stringify(config));
}

/** A second mirror, `other`, over a second sync config of every server and user. */
function withOtherMirror(): void {
  const second = h.sim.configs.create({ name: "second" });
  setMirrors([
    { name: "main", sync_config_id: h.sim.syncConfigId },
    { name: "other", sync_config_id: second },
  ]);
}

const triggerPosts = () =>
  h.sim.requests.filter((r) => r.method === "POST" && r.route === "/sync-task").length;

const keyChanges = (key: string, after: number) => changes(h, after).filter((c) => c.key === key);

describe("sync --mirror, repeated, and the exit code over several mirrors", () => {
  it("runs the named mirrors in order, only them; exit 1 with every summary when one is partial", async () => {
    h = await createHarness({ sim: { docs: 12 } });
    const onlyU1 = h.sim.configs.create({ name: "only-u1", userEmails: [U1] });
    setMirrors([
      { name: "all", sync_config_id: h.sim.syncConfigId },
      { name: "one", sync_config_id: onlyU1 },
    ]);

    // stdout holds the one JSON object even with every log line on (logs go to stderr).
    const second = await syncWith({ LOG_LEVEL: "debug" }, "--mirror", "one");
    expect(second.code).toBe(0);
    expect(second.out.outcome).toBe("succeeded");
    expect(second.out.mirrors.map((m: Json) => m.mirror)).toEqual(["one"]);
    expect(h.sim.runs.list().map((r) => r.sync_config_id)).toEqual([onlyU1]);
    expect(h.query("SELECT DISTINCT mirror FROM resource_access")).toEqual([{ mirror: "one" }]);

    h.sim.setOutcome({ user: U2 }, { task: "FAILED", times: 1 });
    const both = await sync("--mirror", "one", "--mirror", "all");
    expect(both.code).toBe(1);
    expect(both.out.outcome).toBe("not_all_succeeded");
    expect(both.out.mirrors.map((m: Json) => [m.mirror, m.outcome])).toEqual([
      ["one", "succeeded"],
      ["all", "partial"],
    ]);

    const every = await sync();
    expect(every.code).toBe(0);
    expect(every.out.mirrors.map((m: Json) => m.mirror)).toEqual(["all", "one"]);
    expect(triggerPosts()).toBe(5);
  });
});

describe("a resource still seen through another mirror", () => {
  it("is not deleted while any pair of any mirror sees it; the last mirror's sweep tombstones it", async () => {
    h = await createHarness({ sim: { docs: 12 } });
    withOtherMirror();
    expect((await sync()).code).toBe(0);
    const doc = pickDoc(h, (d) => d.visibleTo.length > 0);
    h.sim.docs.remove(doc.docId);
    const before = lastSeq(h);

    const main = await sync("--full", "--mirror", "main");
    expect(main.code).toBe(0);
    expect(main.mirror.counts).toMatchObject({ access_revoked: doc.visibleTo.length, deleted: 0 });
    expect(resourceRow(h, doc.key)).toMatchObject({ deleted_at: null, content_text: expect.any(String) });
    expect(accessRows(h, doc.key)).toEqual([]);
    expect(h.query("SELECT mirror FROM resource_access WHERE key = ? GROUP BY mirror", doc.key)).toEqual([
      { mirror: "other" },
    ]);
    expect(keyChanges(doc.key, before).map((c) => c.op)).not.toContain("delete");

    const mid = lastSeq(h);
    const other = await sync("--full", "--mirror", "other");
    expect(other.mirror.counts).toMatchObject({ deleted: 1 });
    expect(resourceRow(h, doc.key)?.deleted_at).not.toBeNull();
    expect(keyChanges(doc.key, mid).map((c) => c.op)).toEqual(["delete"]);
  });
});

describe("changes", () => {
  it("records one access change when one sweep revokes several users of a live key", async () => {
    h = await createHarness({ sim: { docs: 30 } });
    const doc = pickDoc(h, (d) => d.visibleTo.length === 3);
    expect((await sync()).code).toBe(0);
    h.sim.docs.setVisibility(doc.docId, [U3]);
    const before = lastSeq(h);

    const full = await sync("--full");
    expect(full.code).toBe(0);
    expect(full.mirror.counts).toMatchObject({ access_revoked: 2, deleted: 0 });
    expect(accessRows(h, doc.key).map((a) => a.user_email)).toEqual([U3]);
    expect(keyChanges(doc.key, before).map((c) => c.op)).toEqual(["access"]);
  });

  it("records access, not upsert, when a user first sees an unchanged key; nothing on the next identical pass", async () => {
    h = await createHarness({ sim: { docs: 30 } });
    const doc = pickDoc(h, (d) => d.visibleTo.length === 1);
    expect((await sync()).code).toBe(0);
    const hash = resourceRow(h, doc.key)?.content_hash;
    h.sim.docs.setVisibility(doc.docId, [
      ...doc.visibleTo,
      ...h.sim.users.filter((u) => !doc.visibleTo.includes(u)),
    ]);
    const before = lastSeq(h);

    const full = await sync("--full");
    expect(full.code).toBe(0);
    expect(full.mirror.keys.changed).toBe(0);
    expect(resourceRow(h, doc.key)?.content_hash).toBe(hash);
    expect(accessRows(h, doc.key).map((a) => a.user_email)).toEqual(h.sim.users);
    const ops = keyChanges(doc.key, before).map((c) => c.op);
    expect(ops.length).toBeGreaterThan(0);
    expect(new Set(ops)).toEqual(new Set(["access"]));
    expect(changes(h, before).every((c) => c.key === doc.key)).toBe(true);

    const mid = lastSeq(h);
    const again = await sync("--full");
    expect(again.mirror.keys).toMatchObject({ new: 0, changed: 0 });
    expect(changes(h, mid)).toEqual([]);
  });

  it("brings a tombstone back with an upsert when an incremental sees it again", async () => {
    h = await createHarness({ sim: { docs: 20 } });
    expect((await sync()).code).toBe(0);
    const doc = pickDoc(h, (d) => d.visibleTo.includes(U1));
    h.sim.docs.setVisibility(doc.docId, []);
    expect((await sync("--full")).mirror.counts.deleted).toBe(1);
    expect(resourceRow(h, doc.key)).toMatchObject({ deleted_at: expect.any(String), content_text: null });

    h.sim.docs.setVisibility(doc.docId, [U1]);
    h.sim.docs.edit(doc.docId);
    const before = lastSeq(h);
    const inc = await sync();
    expect(inc.code).toBe(0);
    expect(inc.mirror.mode).toBe("incremental");
    expect(resourceRow(h, doc.key)).toMatchObject({ deleted_at: null, content_text: expect.any(String) });
    expect(resourceRow(h, doc.key)?.fields).not.toBeNull();
    expect(accessRows(h, doc.key).map((a) => a.user_email)).toEqual([U1]);
    expect(keyChanges(doc.key, before).map((c) => c.op)).toEqual(["upsert"]);
  });
});

describe("resource_access.last_seen_at", () => {
  it("is the service's created_at of the newest run that saw the key for the user", async () => {
    h = await createHarness({ sim: { docs: 20 } });
    const seen = () =>
      new Map(
        h
          .query<{ user_email: string; key: string; last_seen_at: string }>(
            "SELECT user_email, key, last_seen_at FROM resource_access",
          )
          .map((r) => [`${r.user_email} ${r.key}`, Date.parse(r.last_seen_at)]),
      );
    const first = await sync();
    const t1 = runCreatedAtMs(h, first.mirror.trigger_id);
    expect(new Set(seen().values())).toEqual(new Set([t1]));

    const doc = pickDoc(h, (d) => d.visibleTo.includes(U1) && d.modifiedAt !== null);
    h.sim.docs.edit(doc.docId);
    const inc = await sync();
    const t2 = runCreatedAtMs(h, inc.mirror.trigger_id);
    for (const [pair, at] of seen())
      expect([pair, at]).toEqual([pair, pair.endsWith(` ${doc.key}`) ? t2 : t1]);

    const full = await sync("--full");
    expect(new Set(seen().values())).toEqual(new Set([runCreatedAtMs(h, full.mirror.trigger_id)]));
  });
});

describe("delete_after_missed_full", () => {
  it("starts the count again when a full snapshot sees the key between two misses", async () => {
    h = await createHarness({ sim: { docs: 20 }, defaults: { delete_after_missed_full: 2 } });
    expect((await sync()).code).toBe(0);
    const doc = pickDoc(h, (d) => d.visibleTo.includes(U1) && d.visibleTo.length >= 2);
    const hide = () =>
      h.sim.docs.setVisibility(
        doc.docId,
        doc.visibleTo.filter((u) => u !== U1),
      );
    const users = () => accessRows(h, doc.key).map((a) => a.user_email);

    hide();
    await sync("--full");
    expect(users()).toContain(U1);
    h.sim.docs.setVisibility(doc.docId, doc.visibleTo);
    await sync("--full");
    hide();
    await sync("--full");
    expect(users()).toContain(U1);
    await sync("--full");
    expect(users()).not.toContain(U1);
  });

  it("does not apply to users who left or pairs past their grace: they lose access at the next full", async () => {
    h = await createHarness({
      sim: { docs: 30 },
      defaults: { delete_after_missed_full: 3, inaccessible_grace_hours: 1 },
    });
    expect((await sync()).code).toBe(0);
    const notion = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id ?? "";
    expect(visibleKeys(h, U3).length).toBeGreaterThan(0);
    expect(visibleKeys(h, U1).some((k) => k.includes(notion))).toBe(true);
    h.sim.people.leaveProject(U3);
    h.sim.people.setAuth(U1, notion, "not_authenticated");
    h.sim.clock.advance(2 * 3_600_000);

    const full = await sync("--full");
    expect(full.code).toBe(0);
    expect(visibleKeys(h, U3)).toEqual([]);
    expect(visibleKeys(h, U1)).toEqual(expectedKeys(h.sim, U1).filter((k) => !k.includes(notion)));
    expect(visibleKeys(h, U2)).toEqual(expectedKeys(h.sim, U2));
  });

  it("does not count a full snapshot in which the pair's source did not succeed as a miss", async () => {
    h = await createHarness({ sim: { docs: 20 }, defaults: { delete_after_missed_full: 2 } });
    expect((await sync()).code).toBe(0);
    const doc = pickDoc(h, (d) => d.visibleTo.includes(U1) && d.visibleTo.length >= 2);
    h.sim.docs.setVisibility(
      doc.docId,
      doc.visibleTo.filter((u) => u !== U1),
    );
    const users = () => accessRows(h, doc.key).map((a) => a.user_email);

    expect((await sync("--full")).code).toBe(0);
    h.sim.setOutcome({ user: U1 }, { task: "FAILED", times: h.sim.servers.length });
    const failed = await sync("--full");
    expect(failed.code).toBe(1);
    expect(failed.mirror.outcome).toBe("partial");
    expect(users()).toContain(U1);
  });
});

describe("the mass-delete guard's thresholds", () => {
  it("applies a sweep of exactly max_delete_fraction of a pair's keys, holds one of more than that and more than 10", async () => {
    h = await createHarness({ sim: { docs: 48, users: 1 } });
    for (const d of h.sim.docs.list()) h.sim.docs.setVisibility(d.docId, [U1]);
    expect((await sync()).code).toBe(0);
    const [a, b] = h.sim.servers.map((s) => s.server_instance_id);
    const ofServer = (id: string | undefined) => pickDocs(h, 0, (d) => d.server_instance_id === id);
    expect(ofServer(a)).toHaveLength(24);
    expect(ofServer(b)).toHaveLength(24);
    for (const d of ofServer(a).slice(0, 12)) h.sim.docs.remove(d.docId);
    for (const d of ofServer(b).slice(0, 13)) h.sim.docs.remove(d.docId);

    const full = await sync("--full");
    expect(full.code).toBe(1);
    expect(full.mirror).toMatchObject({
      outcome: "partial",
      counts: { access_revoked: 12, deleted: 12, sweeps_held: 1, held_revocations: 13 },
    });
    expect(visibleKeys(h, U1)).toHaveLength(36);
  });
});

describe("since", () => {
  it("sends no since when no pair has a watermark yet, whatever was asked", async () => {
    h = await createHarness({ sim: { docs: 12 } });
    h.sim.setOutcome({}, { task: "FAILED", times: h.sim.users.length * h.sim.servers.length });
    const first = await sync();
    expect(first.code).toBe(1);
    expect(h.query("SELECT 1 FROM pairs WHERE watermark IS NOT NULL")).toEqual([]);

    const second = await sync();
    expect(second.code).toBe(0);
    expect(second.mirror).toMatchObject({ mode: "full", since: null, outcome: "succeeded" });
    const runs = h.sim.runs.list().filter((r) => r.trigger_id === second.mirror.trigger_id);
    expect(runs.map((r) => r.since)).toEqual(h.sim.users.map(() => null));
    for (const user of h.sim.users) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
  });
});

describe("settings overridden per mirror", () => {
  it("takes since_overlap_seconds and delete_after_missed_full from the mirror over defaults", async () => {
    h = await createHarness({
      sim: { docs: 20 },
      defaults: { since_overlap_seconds: 300, delete_after_missed_full: 1 },
      mirror: { since_overlap_seconds: 7, delete_after_missed_full: 2 },
    });
    const first = await sync();
    const t0 = runCreatedAtMs(h, first.mirror.trigger_id);
    expect(Date.parse((await sync()).mirror.since)).toBe(t0 - 7_000);

    const doc = pickDoc(h, (d) => d.visibleTo.length > 0);
    h.sim.docs.remove(doc.docId);
    expect((await sync("--full")).mirror.counts).toMatchObject({ access_revoked: 0, deleted: 0 });
    expect((await sync("--full")).mirror.counts).toMatchObject({ deleted: 1 });
  });
});

describe("since from the service's clock", () => {
  it("follows a service clock years ahead of this host's: since is its created_at minus the overlap", async () => {
    h = await createHarness({
      sim: { docs: 20, clock: { start: new Date("2031-06-01T00:00:00Z") } },
      defaults: { since_overlap_seconds: 10 },
    });
    const first = await sync();
    const t0 = runCreatedAtMs(h, first.mirror.trigger_id);
    const doc = pickDoc(h, (d) => d.visibleTo.length > 0 && d.modifiedAt !== null);
    h.sim.docs.edit(doc.docId);
    const before = lastSeq(h);
    const inc = await sync();
    expect(inc.mirror).toMatchObject({ mode: "incremental", outcome: "succeeded" });
    expect(Date.parse(inc.mirror.since)).toBe(t0 - 10_000);
    expect(keyChanges(doc.key, before).map((c) => c.op)).toEqual(["upsert"]);
  });
});

describe("since and inaccessible_grace_hours", () => {
  it.each([
    ["holds since back at exactly inaccessible_grace_hours behind the newest watermark", 0],
    ["stops holding since back one second past inaccessible_grace_hours", 1000],
  ])("a failing pair %s", async (_, pastGraceMs) => {
    h = await createHarness({
      sim: { docs: 20 },
      defaults: { since_overlap_seconds: 60, inaccessible_grace_hours: 2 },
    });
    const first = await sync();
    const t0 = runCreatedAtMs(h, first.mirror.trigger_id);
    h.sim.setOutcome({ user: U1 }, { task: "FAILED", times: h.sim.servers.length });
    h.sim.clock.set(new Date(t0 + 2 * 3600_000 + pastGraceMs));
    const second = await sync();
    expect(second.mirror.outcome).toBe("partial");
    const t1 = runCreatedAtMs(h, second.mirror.trigger_id);
    expect(t1 - t0).toBe(2 * 3600_000 + pastGraceMs);

    // U1 succeeds again: within its grace it is simply caught up; past it, it awaits a full snapshot.
    const third = await sync();
    expect(third.mirror.mode).toBe("incremental");
    const held = pastGraceMs === 0;
    expect(Date.parse(third.mirror.since)).toBe((held ? t0 : t1) - 60_000);
    expect(third.mirror.pairs_awaiting_baseline).toBe(held ? 0 : h.sim.servers.length);
  });
});

describe("watermarks the service writes with a UTC offset", () => {
  /** The same instants, written east of UTC ("...T14:00:00.000+05:00" for 09:00Z). */
  let rewritten = 0;
  const eastOfUtc = (body: string) =>
    body.replace(/"created_at":"([^"]+)"/g, (_, iso: string) => {
      rewritten++;
      const shifted = new Date(Date.parse(iso) + 5 * 3_600_000).toISOString();
      return `"created_at":"${shifted.replace("Z", "+05:00")}"`;
    });

  it("compares them as instants: the oldest watermark still holds since back", async () => {
    const proxy = await startRewritingProxy();
    try {
      h = await createHarness({
        sim: { docs: 20 },
        api: { base_url: proxy.baseUrl },
        defaults: { since_overlap_seconds: 60 },
      });
      proxy.target = h.sim.baseUrl;
      proxy.runList = eastOfUtc;
      proxy.runDetail = eastOfUtc;
      const first = await sync();
      expect(first.code).toBe(0);
      const t0 = runCreatedAtMs(h, first.mirror.trigger_id);
      expect(rewritten).toBeGreaterThan(0);
      proxy.runList = undefined;
      proxy.runDetail = undefined;

      // U1 fails in the next pass: its watermark stays t0 (written +05:00), the others' move (written Z).
      h.sim.setOutcome({ user: U1 }, { task: "FAILED", times: h.sim.servers.length });
      expect((await sync()).mirror.outcome).toBe("partial");
      const third = await sync();
      expect(third.mirror.mode).toBe("incremental");
      expect(Date.parse(third.mirror.since)).toBe(t0 - 60_000);
    } finally {
      await proxy.close();
    }
  });
});

describe("schema_version", () => {
  it.each(["1.7", "1.0.0", 1.5])("reads schema_version %j (major version 1)", async (version) => {
    h = await createHarness({ sim: { docs: 10 } });
    h.sim.setExportVersions({ schema_version: version });
    const s = await sync();
    expect(s.code).toBe(0);
    for (const user of h.sim.users) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
  });

  it.each(["10", 10, "11.0", 0, "0.9"])(
    "refuses schema_version %j: exit 1, the summary says why, nothing written",
    async (version) => {
      h = await createHarness({ sim: { docs: 10 } });
      h.sim.setExportVersions({ schema_version: version });
      const s = await sync();
      expect(s.code).toBe(1);
      expect(s.mirror.outcome).not.toBe("succeeded");
      expect(s.mirror.errors.length).toBeGreaterThan(0);
      for (const e of s.mirror.errors) expect(e.error).toContain("schema_version");
      expect(h.query("SELECT key FROM resources")).toEqual([]);
      expect(h.query("SELECT key FROM resource_access")).toEqual([]);
      expect(h.query("SELECT seq FROM changes")).toEqual([]);
    },
  );
});

describe("several mirrors, one refused or failing", () => {
  it("runs every selected mirror when one is refused: exit 1, each summary with its own outcome", async () => {
    h = await createHarness({ sim: { docs: 12 } });
    const paused = h.sim.configs.create({ name: "paused" });
    for (const s of h.sim.servers) h.sim.configs.setServerAvailable(paused, s.server_instance_id, false);
    setMirrors([
      { name: "paused", sync_config_id: paused },
      { name: "main", sync_config_id: h.sim.syncConfigId },
    ]);
    const s = await sync();
    expect(s.code).toBe(1);
    expect(s.out.outcome).toBe("not_all_succeeded");
    expect(s.out.mirrors.map((m: Json) => [m.mirror, m.outcome])).toEqual([
      ["paused", "refused"],
      ["main", "succeeded"],
    ]);
    for (const user of h.sim.users) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
  });

  it("prints a failed summary for every mirror when the token is rejected, exit 1", async () => {
    h = await createHarness({ sim: { docs: 12 } });
    withOtherMirror();
    const s = await syncWith({ SYNCMIRROR_TEST_TOKEN: "not-the-token" });
    expect(s.code).toBe(1);
    expect(s.out.outcome).toBe("not_all_succeeded");
    expect(s.out.mirrors.map((m: Json) => m.outcome)).toEqual(["failed", "failed"]);
    expect(h.query("SELECT key FROM resources")).toEqual([]);
  });
});

describe("sync --full --dry-run", () => {
  it("on a new mirror writes nothing: the next sync is still the first full snapshot", async () => {
    h = await createHarness({ sim: { docs: 12 } });
    const dry = await sync("--full", "--dry-run");
    expect(dry.code).toBe(0);
    expect(h.query("SELECT key FROM resources")).toEqual([]);
    expect(h.query("SELECT key FROM resource_access")).toEqual([]);
    expect(h.query("SELECT seq FROM changes")).toEqual([]);

    const first = await sync();
    expect(first.mirror).toMatchObject({ mode: "full", since: null, outcome: "succeeded" });
    expect(first.mirror.keys.new).toBeGreaterThan(0);
    for (const user of h.sim.users) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
  });

  it("moves no watermark: the incremental after it still asks from the last real pass and ingests the edit", async () => {
    h = await createHarness({ sim: { docs: 12 }, defaults: { since_overlap_seconds: 30 } });
    const first = await sync();
    const created = runCreatedAtMs(h, first.mirror.trigger_id);
    const doc = pickDoc(h, (d) => d.visibleTo.length > 0 && d.modifiedAt !== null);
    h.sim.docs.edit(doc.docId);
    const hash = resourceRow(h, doc.key)?.content_hash;
    const before = lastSeq(h);
    expect((await sync("--full", "--dry-run")).code).toBe(0);
    expect(resourceRow(h, doc.key)?.content_hash).toBe(hash);
    expect(changes(h, before)).toEqual([]);

    const inc = await sync();
    expect(inc.mirror.mode).toBe("incremental");
    expect(Date.parse(inc.mirror.since)).toBe(created - 30_000);
    expect(resourceRow(h, doc.key)?.content_hash).not.toBe(hash);
    expect(keyChanges(doc.key, before).map((c) => c.op)).toEqual(["upsert"]);
  });

  it("does not list for deletion a key another mirror still sees", async () => {
    h = await createHarness({ sim: { docs: 12 } });
    withOtherMirror();
    expect((await sync()).code).toBe(0);
    const doc = pickDoc(h, (d) => d.visibleTo.length > 0);
    h.sim.docs.remove(doc.docId);
    const dry = await sync("--full", "--dry-run", "--mirror", "main");
    expect(dry.code).toBe(0);
    expect(dry.mirror.dry_run.revoke).toHaveLength(doc.visibleTo.length);
    expect(dry.mirror.dry_run.delete).toEqual([]);
  });
});

describe("sync --full while an incremental is in flight", () => {
  it("finishes the incremental a SIGTERM left in flight first; the exit code is the full pass's", async () => {
    h = await createHarness({ sim: { docs: 20 } });
    expect((await sync()).code).toBe(0);
    const edited = pickDoc(h, (d) => d.visibleTo.includes(U1) && d.modifiedAt !== null);
    h.sim.docs.edit(edited.docId, { title: "edited during the incremental" });
    h.sim.runs.hold();
    const posts = triggerPosts();
    const p = spawnCli(["sync", "--json", "--config", h.configPath], h.env);
    await until(() => triggerPosts() > posts && h.sim.runs.list().length > 0, "the incremental's trigger");
    const stopped = await p.stop("SIGTERM");
    expect(stopped.code).toBe(1);
    expect(JSON.parse(p.stdout()).outcome).toBe("not_all_succeeded");
    h.sim.runs.release();
    // The incremental's U1 source fails; the full after it succeeds.
    h.sim.setOutcome({ user: U1 }, { task: "FAILED", times: 1 });

    const full = await sync("--full");
    expect(full.code).toBe(0);
    expect(full.mirror).toMatchObject({ mode: "full", since: null, outcome: "succeeded" });
    expect(full.mirror.finished_first).toMatchObject({ mode: "incremental", outcome: "partial" });
    expect(triggerPosts()).toBe(posts + 2);
    expect(h.query("SELECT title FROM resources WHERE key = ?", edited.key)).toEqual([
      { title: "edited during the incremental" },
    ]);
  });
});

describe("bad usage", () => {
  it("runs nothing when one of the named mirrors is unknown: exit 2, nothing on stdout", async () => {
    h = await createHarness({ sim: { docs: 6 } });
    const r = await h.cli(["sync", "--json", "--mirror", "main", "--mirror", "nope"]);
    expect(r).toMatchObject({ code: 2, stdout: "" });
    expect(r.stderr.trimEnd().split("\n")).toEqual([expect.stringContaining('"nope"')]);
    expect(triggerPosts()).toBe(0);
  });
});

describe("sync --full after an incremental whose trigger POST never got an answer", () => {
  it("resolves that trigger first, then runs the full with its sweep; one run per user per trigger", async () => {
    h = await createHarness({ sim: { docs: 20 }, maxAttempts: 2 });
    expect((await sync()).code).toBe(0);
    const doc = pickDoc(h, (d) => d.visibleTo.length > 0);
    h.sim.docs.remove(doc.docId);
    h.sim.faults.inject("POST /sync-task", { kind: "503", times: 2 });
    const refused = await sync();
    expect(refused.code).toBe(1);
    expect(refused.mirror.outcome).toBe("failed");

    const full = await sync("--full");
    expect(full.code).toBe(0);
    expect(full.mirror).toMatchObject({
      mode: "full",
      since: null,
      outcome: "succeeded",
      counts: { deleted: 1 },
    });
    expect(resourceRow(h, doc.key)?.deleted_at).not.toBeNull();
    const perTrigger = new Map<string, number>();
    for (const r of h.sim.runs.list()) perTrigger.set(r.trigger_id, (perTrigger.get(r.trigger_id) ?? 0) + 1);
    for (const n of perTrigger.values()) expect(n).toBe(h.sim.users.length);
  });
});

describe("runs finish independently", () => {
  it("ingests a run's export as soon as that run finishes, while the others still run", async () => {
    h = await createHarness({ sim: { docs: 20, lifecycle: "manual" } });
    const p = spawnCli(["sync", "--json", "--config", h.configPath], h.env);
    const runs = await until(
      () => h.sim.runs.list().length === h.sim.users.length && h.sim.runs.list(),
      "the runs",
    );
    const u1 = runs.find((r) => r.user_email === U1);
    if (!u1) throw new Error("no run of user1");
    h.sim.runs.advance(u1.sync_id);
    h.sim.runs.advance(u1.sync_id);
    expect(h.sim.runs.get(u1.sync_id).status).toBe("completed");

    await until(
      () => visibleKeys(h, U1).length === expectedKeys(h.sim, U1).length,
      "user1's export ingested",
    );
    expect(h.sim.runs.list().filter((r) => r.status !== "completed")).toHaveLength(h.sim.users.length - 1);
    expect(visibleKeys(h, U2)).toEqual([]);

    h.sim.runs.finishAll();
    expect((await p.exited).code, p.stderr()).toBe(0);
    expect(JSON.parse(p.stdout()).mirrors[0].outcome).toBe("succeeded");
    for (const user of h.sim.users) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
  });
});
