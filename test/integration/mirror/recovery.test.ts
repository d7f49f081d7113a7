/**
 * Transient faults and crashes end in the same mirror as a clean run (docs/reference/sync-semantics.md#one-trigger-per-mirror). Crashes use the documented seam SYNCMIRROR_CRASH_AT through the built CLI.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Simulator } from "../../../src/simulator/index.js";
import { changes, mirrorContents, pickDoc } from "../../helpers/mirror-db.js";
import { createHarness, expectedKeys, type Harness, visibleKeys } from "../../helpers/mirror-harness.js";
import { startRewritingProxy } from "../../helpers/rewriting-proxy.js";

const open: Harness[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

async function harness(options: Parameters<typeof createHarness>[0]): Promise<Harness> {
  const created = await createHarness(options);
  open.push(created);
  return created;
}

const U1 = "user1@example.com";
const EXPORT = "GET /sync-task/{sync_id}/export";
const posts = (sim: Simulator) => sim.requests.filter((r) => r.method === "POST" && r.route === "/sync-task");

/** One user loses a document, another document is removed: the same change on each simulator. */
function change(ref: Harness, sims: Simulator[]): void {
  const doc = pickDoc(ref, (d) => d.visibleTo.includes(U1) && d.visibleTo.length >= 2);
  const gone = pickDoc(ref, (d) => d.key !== doc.key && d.visibleTo.length > 0);
  for (const sim of sims) {
    sim.docs.setVisibility(
      doc.docId,
      doc.visibleTo.filter((u) => u !== U1),
    );
    sim.docs.remove(gone.docId);
  }
}

describe("transient faults", () => {
  it("ends with the same database as a clean run after 429s, 503s and connection resets", async () => {
    const clean = await harness({ sim: { docs: 30 } });
    const faulty = await harness({ sim: { docs: 30 }, maxAttempts: 6 });
    const injectAll = () => {
      const f = faulty.sim.faults;
      f.inject("POST /sync-task", { kind: "503" });
      f.inject("GET /sync-task", { kind: "429", retryAfterSeconds: 0 });
      f.inject("GET /sync-task", { kind: "reset" });
      f.inject(EXPORT, { kind: "503" });
      f.inject(EXPORT, { kind: "reset" });
      f.inject(EXPORT, { kind: "429", retryAfterSeconds: 0 });
    };

    injectAll();
    expect((await faulty.sync()).outcome).toBe("succeeded");
    expect((await clean.sync()).outcome).toBe("succeeded");
    change(clean, [clean.sim, faulty.sim]);
    injectAll();
    expect((await faulty.sync({ full: true })).outcome).toBe("succeeded");
    expect((await clean.sync({ full: true })).outcome).toBe("succeeded");

    expect(faulty.sim.faults.pending()).toEqual([]);
    expect(faulty.sim.requests.filter((r) => r.fault).length).toBe(12);
    expect(posts(faulty.sim).filter((r) => r.status === 201)).toHaveLength(2);
    expect(mirrorContents(faulty)).toEqual(mirrorContents(clean));
    // Runs are ingested concurrently, so the feed's order may differ; its content may not.
    const feed = (x: Harness) =>
      changes(x)
        .map((c) => `${c.op} ${c.key}`)
        .sort();
    expect(feed(faulty)).toEqual(feed(clean));
  });
});

describe("crashes", () => {
  it("adopts the runs of a trigger whose POST response was lost to a kill, instead of triggering again", async () => {
    const h = await harness({ sim: { docs: 20 } });
    const crashed = await h.cli(["sync"], { SYNCMIRROR_CRASH_AT: "after-trigger-post" });
    expect(crashed.code, crashed.stderr).toBeNull();
    expect(posts(h.sim)).toHaveLength(1);
    expect(h.query("SELECT state FROM triggers")).toEqual([{ state: "intent" }]);

    const resumed = await h.cli(["sync", "--json"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout).mirrors[0]).toMatchObject({
      adopted: true,
      resumed: true,
      mode: "full",
    });
    expect(posts(h.sim)).toHaveLength(1);

    const clean = await harness({ sim: { docs: 20 } });
    await clean.sync();
    expect(mirrorContents(h)).toEqual(mirrorContents(clean));
  });

  it("status names no holder once the sync that held the mirror was killed: the next pass takes its trigger on", async () => {
    const h = await harness({ sim: { docs: 20 } });
    const crashed = await h.cli(["sync"], { SYNCMIRROR_CRASH_AT: "after-trigger-post" });
    expect(crashed.code, crashed.stderr).toBeNull();
    const status = await h.cli(["status", "--json"]);
    expect(status.code, status.stderr).toBe(0);
    const mirror = (JSON.parse(status.stdout) as { mirrors: Record<string, unknown>[] }).mirrors[0];
    expect(mirror).toMatchObject({ holder: null, in_flight: { mode: "full" } });
    const text = await h.cli(["status"]);
    expect(text.stdout).toMatch(/held by: +nobody/);
    expect(text.stdout).toContain("the next pass adopts any runs that POST created");
    expect(text.stdout).not.toContain("the pass running on");
  });

  it("finishes an incremental left in flight before triggering the full that sync --full asked for", async () => {
    const h = await harness({ sim: { docs: 20 } });
    await h.sync();
    const doc = pickDoc(h, (d) => d.visibleTo.length > 0);
    h.sim.docs.edit(doc.docId, { title: "Edited while the incremental was in flight" });
    const crashed = await h.cli(["sync"], { SYNCMIRROR_CRASH_AT: "after-trigger-post" });
    expect(crashed.code, crashed.stderr).toBeNull();

    const full = await h.cli(["sync", "--full", "--json"]);
    expect(full.code, full.stderr).toBe(0);
    const summary = (JSON.parse(full.stdout) as { mirrors: Record<string, unknown>[] }).mirrors[0];
    expect(summary).toMatchObject({ mode: "full", outcome: "succeeded", resumed: false });
    // The incremental it finished first is reported beside it, not lost.
    expect(summary?.finished_first).toMatchObject({ mode: "incremental", outcome: "succeeded" });
    const first = summary?.finished_first as { trigger_id: string } | undefined;
    expect(first?.trigger_id).toEqual(expect.any(String));
    expect(first?.trigger_id).not.toBe(summary?.trigger_id);
    const triggers = h.query<{ mode: string; adopted: number; state: string }>(
      "SELECT mode, adopted, state FROM triggers ORDER BY id",
    );
    expect(triggers).toEqual([
      { mode: "full", adopted: 0, state: "done" },
      { mode: "incremental", adopted: 1, state: "done" },
      { mode: "full", adopted: 0, state: "done" },
    ]);
    expect(posts(h.sim)).toHaveLength(3);
    expect(h.query("SELECT title FROM resources WHERE key = ?", doc.key)).toEqual([
      { title: "Edited while the incremental was in flight" },
    ]);
  });

  it("resumes a killed export at the page after the last one committed", async () => {
    const h = await harness({ sim: { docs: 700, users: 1, serversPerType: { notion: 1 } } });
    const crashed = await h.cli(["sync"], { SYNCMIRROR_CRASH_AT: "between-pages" });
    expect(crashed.code, crashed.stderr).toBeNull();
    expect(h.query("SELECT next_offset, ingest FROM runs")).toEqual([
      { next_offset: 250, ingest: "ingesting" },
    ]);
    expect(h.query("SELECT count(*) AS n FROM resources")).toEqual([{ n: 250 }]);

    const mark = h.sim.requests.length;
    const resumed = await h.cli(["sync", "--json"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    const offsets = h.sim.requests
      .slice(mark)
      .filter((r) => r.route === "/sync-task/{sync_id}/export")
      .map((r) => r.query.offset);
    expect(offsets).toEqual(["250", "500"]);
    expect(posts(h.sim)).toHaveLength(1);
    expect(visibleKeys(h, U1)).toEqual(expectedKeys(h.sim, U1));
    const feed = changes(h);
    expect(feed).toHaveLength(700);
    expect(new Set(feed.map((c) => c.key)).size).toBe(700);
  });
});

describe("a run list whose items do not say their since", () => {
  it("an incremental trigger whose answer was lost is adopted, not POSTed again", async () => {
    const proxy = await startRewritingProxy();
    try {
      const h = await harness({ sim: { docs: 20 }, api: { base_url: proxy.baseUrl } });
      proxy.target = h.sim.baseUrl;
      expect((await h.sync()).outcome).toBe("succeeded");
      // The service documents its list items as a reduced view of a run: without `since` here.
      proxy.runList = (body) => {
        const page = JSON.parse(body);
        for (const item of page.items) delete item.since;
        return JSON.stringify(page);
      };
      h.sim.faults.inject("POST /sync-task", { kind: "drop-after" });

      const summary = await h.sync();
      expect(summary, summary.message).toMatchObject({ outcome: "succeeded", adopted: true });
      expect(summary.since, "the incremental sent a since").not.toBeNull();
      expect(posts(h.sim)).toHaveLength(2);
      expect(new Set(h.sim.runs.list().map((r) => r.trigger_id)).size, "two triggers in all").toBe(2);
      for (const user of h.sim.users) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
    } finally {
      await proxy.close();
    }
  });
});
