/** docs/reference/sync-semantics.md#deletions-and-changes: at most one change per key per run ingested, seq increasing, nothing for nothing. */
import { afterEach, describe, expect, it } from "vitest";
import { changes, lastSeq, pickDoc } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";

let h: Harness;
afterEach(async () => {
  await h?.close();
});

describe("changes feed", () => {
  it("records one upsert per key, then access for each further user who sees it", async () => {
    h = await createHarness({ sim: { docs: 30 } });
    await h.sync();
    const feed = changes(h);
    const docs = h.sim.docs.list().filter((d) => d.visibleTo.length > 0);
    expect(feed).toHaveLength(docs.reduce((n, d) => n + d.visibleTo.length, 0));
    for (const d of docs) {
      const ops = feed.filter((c) => c.key === d.key).map((c) => c.op);
      expect(ops[0]).toBe("upsert");
      expect(ops.slice(1)).toEqual(d.visibleTo.slice(1).map(() => "access"));
    }
    const seqs = feed.map((c) => c.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
  });

  it("keeps seq increasing across passes", async () => {
    h = await createHarness({ sim: { docs: 20 } });
    await h.sync();
    const first = lastSeq(h);
    const doc = pickDoc(h, (d) => d.visibleTo.length > 0);
    h.sim.docs.edit(doc.docId);
    h.sim.docs.remove(pickDoc(h, (d) => d.key !== doc.key && d.visibleTo.length > 0).docId);
    await h.sync({ full: true });
    const later = changes(h, first);
    expect(later.map((c) => c.op).sort()).toEqual(["delete", "upsert"]);
    for (const c of later) expect(c.seq).toBeGreaterThan(first);
  });

  it("records a key once when an export page repeats it", async () => {
    h = await createHarness({ sim: { docs: 600, users: 1, serversPerType: { notion: 1 } } });
    h.sim.faults.quirk("repeat-key");
    const s = await h.sync();
    expect(s.counts).toMatchObject({ upserted: 600, unchanged: 1 });
    const feed = changes(h);
    expect(feed).toHaveLength(600);
    expect(new Set(feed.map((c) => c.key)).size).toBe(600);
  });

  it("records a single delete when every user loses a key in one sweep", async () => {
    h = await createHarness({ sim: { docs: 20 } });
    await h.sync();
    const doc = pickDoc(h, (d) => d.visibleTo.length === h.sim.users.length);
    const before = lastSeq(h);
    h.sim.docs.setVisibility(doc.docId, []);
    await h.sync({ full: true });
    expect(changes(h, before)).toEqual([{ seq: expect.any(Number), key: doc.key, op: "delete" }]);
  });
});
