/**
 * docs/reference/sync-semantics.md#outcomes: `failed` means nothing could be ingested. A pass whose only run's export breaks
 * after its first page wrote resources, so it is `partial`, and its message says what was
 * ingested and what was not.
 */
import { afterEach, describe, expect, it } from "vitest";
import { pairs } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { type RewritingProxy, startRewritingProxy } from "../../helpers/rewriting-proxy.js";

let h: Harness | undefined;
let proxy: RewritingProxy | undefined;
afterEach(async () => {
  await h?.close();
  await proxy?.close();
  h = undefined;
  proxy = undefined;
});

/** A harness whose API requests go through a rewriting proxy (`proxy`), one attempt each. */
async function behindProxy(sim: { users: number; docs: number }): Promise<Harness> {
  const p = await startRewritingProxy();
  proxy = p;
  const harness = await createHarness({ sim, maxAttempts: 1, api: { base_url: p.baseUrl } });
  p.target = harness.sim.baseUrl;
  return harness;
}

describe("an export that breaks after its first page", () => {
  it("is partial, not failed, and says how many rows were ingested from which runs", async () => {
    h = await behindProxy({ users: 1, docs: 1200 });
    proxy?.rewrites.push(
      (body) => body,
      () => "{ this is not JSON",
    );

    const summary = await h.sync();
    const stored = h.query<{ n: number }>("SELECT count(*) AS n FROM resources")[0]?.n ?? 0;
    expect(stored).toBe(250);
    expect(summary.outcome).toBe("partial");
    expect(summary.counts.upserted).toBe(250);
    expect(summary.message).toMatch(/250 exported row\(s\) were ingested from 1 of 1 run\(s\)/);
    expect(summary.message).toMatch(/1 run\(s\) could not be read to the end/);
    expect(summary.errors).toEqual([expect.objectContaining({ error: expect.stringMatching(/not JSON/) })]);
    expect(pairs(h).every((p) => p.watermark === null)).toBe(true);
  });
});

describe("a first export page that does not list every source of its run", () => {
  const accessRows = (harness: Harness) =>
    harness.query<{ user_email: string; server_instance_id: string; n: number }>(
      "SELECT user_email, server_instance_id, count(*) AS n FROM resource_access GROUP BY user_email, server_instance_id ORDER BY user_email, server_instance_id",
    );

  it("counts the sources it leaves out as not succeeded: a full pass revokes nothing for them (they are not taken as removed), partial", async () => {
    h = await createHarness({ sim: { users: 2, docs: 20 }, maxAttempts: 1 });
    expect((await h.sync()).outcome).toBe("succeeded");
    const before = accessRows(h);
    expect(before).toHaveLength(4);

    h.sim.faults.inject("GET /sync-task/{sync_id}/export", { kind: "missing-field", field: "sources" });
    const full = await h.sync({ full: true });
    expect(full.outcome).toBe("partial");
    expect(full.counts.access_revoked).toBe(0);
    expect(full.counts.deleted).toBe(0);
    expect(full.errors).toHaveLength(2);
    for (const e of full.errors) expect(e.error).toBe("COMPLETED, but the export does not list the source");
    expect(accessRows(h)).toEqual(before);
  });

  it("names the source missing from the page and keeps both pairs' access", async () => {
    h = await behindProxy({ users: 2, docs: 20 });
    expect((await h.sync()).outcome).toBe("succeeded");
    const before = accessRows(h);

    let dropped = "";
    proxy?.rewrites.push((body) => {
      const page = JSON.parse(body) as { sources: { source: string }[] };
      dropped = page.sources[0]?.source ?? "";
      return JSON.stringify({ ...page, sources: page.sources.slice(1) });
    });
    const full = await h.sync({ full: true });
    expect(full.outcome).toBe("partial");
    expect(full.counts.access_revoked).toBe(0);
    expect(full.errors).toEqual([
      expect.objectContaining({
        source: dropped,
        error: "COMPLETED, but the export does not list the source",
      }),
    ]);
    expect(accessRows(h)).toEqual(before);
  });
});

describe("an export that ends before the total it gives", () => {
  type Page = { resources: unknown[]; page: { next_offset: number | null; total?: number } };
  // Either way the rows that came are written (the first page's as unchanged): partial.
  const cut: Record<string, { page: number; outcome: string; rewrite: (page: Page) => void }> = {
    "its first page says it is the last": {
      page: 0,
      outcome: "partial",
      rewrite: (page) => {
        page.page.next_offset = null;
      },
    },
    "its last page lacks resources": {
      page: 2,
      outcome: "partial",
      rewrite: (page) => {
        page.resources = page.resources.slice(0, 1);
      },
    },
  };

  for (const [how, { page, outcome, rewrite }] of Object.entries(cut)) {
    it(`fails the run when ${how}: a full pass deletes and revokes nothing and moves no watermark, exit 1`, async () => {
      proxy = await startRewritingProxy();
      const p = proxy;
      h = await createHarness({
        sim: { users: 1, docs: 12 },
        api: { base_url: p.baseUrl },
        export: { page_size: 5 },
      });
      p.target = h.sim.baseUrl;
      expect((await h.cli(["sync"])).code).toBe(0);
      const watermarks = pairs(h).map((x) => x.watermark);
      p.rewrites[page] = (body) => {
        const parsed = JSON.parse(body) as Page;
        expect(parsed.page.total).toBe(12);
        rewrite(parsed);
        return JSON.stringify(parsed);
      };

      const full = await h.cli(["sync", "--full", "--json"]);
      expect(full.code, full.stderr).toBe(1);
      const summary = JSON.parse(full.stdout).mirrors[0];
      expect(summary.outcome).toBe(outcome);
      expect(summary.counts).toMatchObject({ deleted: 0, access_revoked: 0 });
      expect(summary.errors).toEqual([
        expect.objectContaining({ error: expect.stringMatching(/of the 12/) }),
      ]);
      expect(h.query("SELECT count(*) AS n FROM resources WHERE deleted_at IS NULL")).toEqual([{ n: 12 }]);
      expect(h.query("SELECT count(*) AS n FROM resource_access")).toEqual([{ n: 12 }]);
      expect(pairs(h).map((x) => x.watermark)).toEqual(watermarks);

      // The whole export again: nothing to delete, and the pass succeeds.
      const again = await h.cli(["sync", "--full", "--json"]);
      expect(again.code, again.stderr).toBe(0);
      expect(JSON.parse(again.stdout).mirrors[0].counts).toMatchObject({ deleted: 0, access_revoked: 0 });
    });
  }
});
