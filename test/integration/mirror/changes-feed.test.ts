/** docs/reference/sync-semantics.md#deletions-and-changes: at most one change per key per run ingested, seq increasing, nothing for nothing. */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { changes, lastSeq, pickDoc } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { type RewritingProxy, startRewritingProxy } from "../../helpers/rewriting-proxy.js";
import { buildOnce } from "../daemon/setup.js";

let h: Harness;
let proxy: RewritingProxy | undefined;
beforeAll(buildOnce);
afterEach(async () => {
  await h?.close();
  await proxy?.close();
  proxy = undefined;
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

  it("gives a consumer that read the feed between two transactions of a sweep a change for each", async () => {
    h = await createHarness({ sim: { docs: 10, users: 3 } });
    const [a, b, c] = h.sim.users as [string, string, string];
    const doc = pickDoc(h, () => true);
    h.sim.docs.setVisibility(doc.docId, [a, b, c]);
    expect((await h.cli(["sync", "--full"])).code).toBe(0);

    // a and b lose the key, c keeps it: two runs revoke, each in a transaction of its own. The
    // pass is killed after the first of them commits, and a consumer reads the feed there.
    h.sim.docs.setVisibility(doc.docId, [c]);
    const killed = await h.cli(["sync", "--full"], { SYNCMIRROR_CRASH_AT: "mid-sweep:2" });
    expect(killed.code, killed.stderr).toBeNull();
    const holders = () =>
      h
        .query<{ user_email: string }>(
          "SELECT user_email FROM resource_access WHERE key = ? ORDER BY user_email",
          doc.key,
        )
        .map((r) => r.user_email);
    const readAt = lastSeq(h);
    const seenThen = holders();
    expect(seenThen).toHaveLength(2);
    expect(
      changes(h)
        .filter((ch) => ch.key === doc.key)
        .at(-1)?.op,
    ).toBe("access");

    const resumed = await h.cli(["sync"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(holders()).toEqual([c]);
    // Reading onward from where it stopped, the consumer learns that the key's access changed again.
    expect(changes(h, readAt)).toEqual([{ seq: expect.any(Number), key: doc.key, op: "access" }]);
  });

  it("records a key again, after the pages between, when a later page of its run rewrites it", async () => {
    proxy = await startRewritingProxy();
    h = await createHarness({
      sim: { docs: 15, users: 1, serversPerType: { notion: 1 } },
      api: { base_url: proxy.baseUrl },
      export: { page_size: 5 },
    });
    proxy.target = h.sim.baseUrl;
    // The same key in the first and the last page of one run's export, its content changed between.
    let key = "";
    const withRepeated = (version: string) => (body: string) => {
      const page = JSON.parse(body) as { resources: Record<string, unknown>[] };
      const model = page.resources[0] as { key: string; native_id: string };
      key = `${model.key.slice(0, model.key.length - model.native_id.length)}repeated`;
      page.resources.push({
        ...model,
        key,
        native_id: "repeated",
        content: { format: "markdown", text: `version ${version}` },
        content_hash: `sha256:${version.repeat(64)}`,
      });
      return JSON.stringify(page);
    };
    proxy.rewrites[0] = withRepeated("a");
    proxy.rewrites[2] = withRepeated("b");
    expect((await h.cli(["sync"])).code).toBe(0);

    expect(h.query("SELECT content_text FROM resources WHERE key = ?", key)).toEqual([
      { content_text: "version b" },
    ]);
    // A consumer that read the feed once the first page committed (every key of it, the repeated
    // one's version a) still has the key ahead of it: its one change comes after the middle page's.
    const middle = proxy.served
      .map(
        (body) =>
          JSON.parse(body.toString("utf8")) as { resources: { key: string }[]; page: { offset: number } },
      )
      .find((p) => p.page.offset === 5);
    const middleKeys = new Set(middle?.resources.map((r) => r.key));
    expect(middleKeys.size).toBe(5);
    const feed = changes(h);
    const repeated = feed.filter((c) => c.key === key);
    expect(repeated.map((c) => c.op)).toEqual(["upsert"]);
    const middleSeqs = feed.filter((c) => middleKeys.has(c.key)).map((c) => c.seq);
    expect(middleSeqs).toHaveLength(5);
    expect(repeated[0]?.seq).toBeGreaterThan(Math.max(...middleSeqs));
  });
});
