/** docs/reference/sync-semantics.md#watermarks-and-since, docs/reference/sync-semantics.md#full-snapshots-and-sweeps, docs/reference/sync-semantics.md#deletions-and-changes: what each kind of pass sends, writes and records. */
import { afterEach, describe, expect, it } from "vitest";
import {
  accessRows,
  changes,
  countRows,
  lastSeq,
  pairs,
  pickDoc,
  resourceRow,
  runCreatedAtMs,
  sinceSent,
} from "../../helpers/mirror-db.js";
import { createHarness, expectedKeys, type Harness, visibleKeys } from "../../helpers/mirror-harness.js";
import { startRewritingProxy } from "../../helpers/rewriting-proxy.js";

let h: Harness;
afterEach(async () => {
  await h?.close();
});

describe("first and incremental passes", () => {
  it("makes the first pass a full snapshot: no since is sent", async () => {
    h = await createHarness({ sim: { docs: 20 } });
    const first = await h.sync();
    expect(first).toMatchObject({ mode: "full", since: null, outcome: "succeeded" });
    expect(sinceSent(h, first.trigger_id)).toEqual(h.sim.users.map(() => null));
    for (const user of h.sim.users) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
  });

  it("sends the oldest pair watermark minus since_overlap_seconds and upserts only what changed", async () => {
    h = await createHarness({ sim: { docs: 30 }, defaults: { since_overlap_seconds: 120 } });
    const first = await h.sync();
    const firstCreatedMs = runCreatedAtMs(h, first.trigger_id);
    for (const p of pairs(h)) expect(Date.parse(p.watermark ?? "")).toBe(firstCreatedMs);

    const edited = pickDoc(h, (d) => d.visibleTo.length >= 2);
    h.sim.docs.edit(edited.docId);
    const before = lastSeq(h);
    const oldHash = resourceRow(h, edited.key)?.content_hash;

    const second = await h.sync();
    expect(second.mode).toBe("incremental");
    expect(Date.parse(second.since ?? "")).toBe(firstCreatedMs - 120_000);
    for (const since of sinceSent(h, second.trigger_id))
      expect(Date.parse(since ?? "")).toBe(firstCreatedMs - 120_000);
    // The edited document comes once per user who sees it: written once, unchanged after.
    expect(second.counts).toMatchObject({ upserted: 1, unchanged: edited.visibleTo.length - 1, deleted: 0 });
    expect(changes(h, before)).toEqual([expect.objectContaining({ key: edited.key, op: "upsert" })]);
    expect(resourceRow(h, edited.key)?.content_hash).not.toBe(oldHash);
    const secondCreatedMs = runCreatedAtMs(h, second.trigger_id);
    for (const p of pairs(h)) expect(Date.parse(p.watermark ?? "")).toBe(secondCreatedMs);
  });

  it("records no change when the same content is ingested again", async () => {
    h = await createHarness({ sim: { docs: 20 } });
    await h.sync();
    const doc = pickDoc(h, (d) => d.visibleTo.length > 0);
    h.sim.docs.edit(doc.docId);
    await h.sync();
    const before = lastSeq(h);

    // The overlap sends the edited document again, and a full pass sends everything again.
    const incremental = await h.sync();
    expect(incremental.mode).toBe("incremental");
    expect(incremental.counts.unchanged).toBeGreaterThanOrEqual(1);
    const full = await h.sync({ full: true });
    expect(full.counts.upserted).toBe(0);
    expect(full.counts.unchanged).toBeGreaterThan(0);
    expect(changes(h, before)).toEqual([]);
  });

  it("keeps the stored row when only columns outside content_hash differ: the title and url stay as first written", async () => {
    const proxy = await startRewritingProxy();
    try {
      h = await createHarness({ sim: { users: 1, docs: 5 }, api: { base_url: proxy.baseUrl } });
      proxy.target = h.sim.baseUrl;
      await h.sync();
      const before = lastSeq(h);
      const [first] = h.query<{ key: string; title: string; url: string }>(
        "SELECT key, title, url FROM resources ORDER BY key LIMIT 1",
      );
      // A rename upstream that the service's hash does not cover (it hashes content, fields and attachments).
      proxy.rewrites[0] = (body) => {
        const page = JSON.parse(body) as { resources: Record<string, unknown>[] };
        Object.assign(page.resources[0] as Record<string, unknown>, {
          title: "Renamed upstream",
          url: "https://renamed.example/doc",
        });
        return JSON.stringify(page);
      };
      const full = await h.sync({ full: true });
      expect(full.keys).toMatchObject({ changed: 0, unchanged: 5 });
      expect(h.query("SELECT key, title, url FROM resources ORDER BY key LIMIT 1")).toEqual([first]);
      expect(changes(h, before)).toEqual([]);
    } finally {
      await proxy.close();
    }
  });
});

describe("baselines", () => {
  it("lets a pair first seen in an incremental await its baseline until a full snapshot succeeds", async () => {
    h = await createHarness({ sim: { docs: 30 } });
    const late = "user3@example.com";
    h.sim.people.leaveProject(late);
    await h.sync();
    h.sim.people.joinProject(late);

    const incremental = await h.sync();
    expect(incremental).toMatchObject({ mode: "incremental", pairs_awaiting_baseline: h.sim.servers.length });
    expect(visibleKeys(h, late)).toEqual([]);
    const full = await h.sync({ full: true });
    expect(full.pairs_awaiting_baseline).toBe(0);
    expect(visibleKeys(h, late)).toEqual(expectedKeys(h.sim, late));
  });
});

describe("deletions", () => {
  it("leaves a document removed upstream live after an incremental, tombstones it at the next full", async () => {
    h = await createHarness({ sim: { docs: 20 } });
    await h.sync();
    const doc = pickDoc(h, (d) => d.visibleTo.length > 0);
    const accessBefore = accessRows(h, doc.key);
    h.sim.docs.remove(doc.docId);

    const incremental = await h.sync();
    expect(incremental.mode).toBe("incremental");
    expect(resourceRow(h, doc.key)?.deleted_at).toBeNull();
    expect(accessRows(h, doc.key)).toEqual(accessBefore);

    const before = lastSeq(h);
    const full = await h.sync({ full: true });
    expect(full).toMatchObject({ outcome: "succeeded", counts: { deleted: 1 } });
    expect(resourceRow(h, doc.key)?.deleted_at).not.toBeNull();
    expect(accessRows(h, doc.key)).toEqual([]);
    expect(changes(h, before)).toEqual([expect.objectContaining({ key: doc.key, op: "delete" })]);
  });

  it("never deletes a resource without a modified time on an incremental pass", async () => {
    h = await createHarness({ sim: { docs: 60 } });
    await h.sync();
    const undated = h.sim.docs.list().filter((d) => d.modifiedAt === null && d.visibleTo.length > 0);
    expect(undated.length).toBeGreaterThan(0);
    const before = undated.map((d) => accessRows(h, d.key));

    for (let i = 0; i < 2; i++) {
      const s = await h.sync();
      expect(s).toMatchObject({ mode: "incremental", outcome: "succeeded", counts: { deleted: 0 } });
    }
    expect(undated.map((d) => accessRows(h, d.key))).toEqual(before);
    for (const d of undated) expect(resourceRow(h, d.key)?.deleted_at).toBeNull();
  });
});

describe("versions", () => {
  it("upserts every resource and deletes none when engine_version changes every hash", async () => {
    h = await createHarness({ sim: { docs: 20 } });
    await h.sync();
    const live = countRows(h, "resources");
    const accessBefore = accessRows(h);
    const before = lastSeq(h);
    h.sim.setExportVersions({ engine_version: 3 });

    const full = await h.sync({ full: true });
    expect(full.outcome).toBe("succeeded");
    expect(full.counts).toMatchObject({ upserted: live, deleted: 0, access_revoked: 0 });
    const after = changes(h, before);
    expect(after).toHaveLength(live);
    expect(new Set(after.map((c) => c.op))).toEqual(new Set(["upsert"]));
    expect(accessRows(h)).toEqual(accessBefore);
  });

  it('reads schema_version "1.0"', async () => {
    h = await createHarness({ sim: { docs: 10 } });
    h.sim.setExportVersions({ schema_version: "1.0" });
    const s = await h.sync();
    expect(s.outcome).toBe("succeeded");
    for (const user of h.sim.users) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
  });

  it("refuses schema_version 2 with a clear error and writes nothing of it", async () => {
    h = await createHarness({ sim: { docs: 10 } });
    await h.sync();
    const tables = () => ({ r: h.query("SELECT * FROM resources"), a: accessRows(h), p: pairs(h) });
    const before = tables();
    const seq = lastSeq(h);
    h.sim.docs.edit(pickDoc(h, (d) => d.visibleTo.length > 0).docId);
    h.sim.setExportVersions({ schema_version: 2 });

    const s = await h.sync({ full: true });
    expect(s.outcome).toBe("failed");
    expect(s.errors).toHaveLength(h.sim.users.length);
    for (const e of s.errors) expect(e.error).toMatch(/schema_version 2.*major version 1/);
    expect(tables()).toEqual(before);
    expect(lastSeq(h)).toBe(seq);
  });
});
