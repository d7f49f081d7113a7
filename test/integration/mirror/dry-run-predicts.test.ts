/**
 * docs/reference/cli.md#sync-output: `sync --full --dry-run` predicts the real full pass on the same
 * state, the mass-delete guard included: what it would revoke and delete, the sweeps it would
 * hold, its outcome and its exit code.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ProblemsJson } from "../../../src/console/problems.js";
import { accessRows } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { type RewritingProxy, startRewritingProxy } from "../../helpers/rewriting-proxy.js";

let h: Harness;
let proxy: RewritingProxy | undefined;
afterEach(async () => {
  await h?.close();
  await proxy?.close();
  proxy = undefined;
});

/** Through the simulator's admin route, as the audit did: a seeded share of the live documents. */
async function removeRandomDocs(fraction: number): Promise<void> {
  const response = await fetch(`${new URL(h.sim.baseUrl).origin}/_sim/docs/remove-random`, {
    method: "POST",
    headers: { authorization: `Bearer ${h.sim.token}`, "content-type": "application/json" },
    body: JSON.stringify({ fraction, seed: 7 }),
  });
  expect(response.status).toBe(200);
}

const tombstoned = () =>
  h
    .query<{ key: string }>("SELECT key FROM resources WHERE deleted_at IS NOT NULL")
    .map((r) => r.key)
    .sort();
const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const accessKey = (a: { user_email: string; key: string }) => `${a.user_email}\n${a.key}`;

/** The dry run, then the real pass with the same flags; both through the CLI. */
async function dryThenReal(flags: string[]) {
  const dryOut = await h.cli(["sync", "--full", "--dry-run", "--json", ...flags]);
  const accessBefore = accessRows(h).map(accessKey);
  const deletedBefore = tombstoned();
  const realOut = await h.cli(["sync", "--full", "--json", ...flags]);
  const accessAfter = new Set(accessRows(h).map(accessKey));
  return {
    dry: { code: dryOut.code, summary: JSON.parse(dryOut.stdout).mirrors[0] },
    real: { code: realOut.code, summary: JSON.parse(realOut.stdout).mirrors[0] },
    revoked: accessBefore.filter((a) => !accessAfter.has(a)).sort(byteOrder),
    deleted: tombstoned().filter((k) => !deletedBefore.includes(k)),
  };
}

describe("sync --full --dry-run predicts the real pass", () => {
  it("leaves out the sweeps the guard would hold, and is partial (exit 1) as the real pass is", async () => {
    h = await createHarness({ sim: { docs: 40 } });
    expect((await h.cli(["sync", "--json"])).code).toBe(0);
    await removeRandomDocs(0.7);

    const { dry, real, revoked, deleted } = await dryThenReal([]);
    // The state this is about: some pairs' sweeps held, others applied, keys deleted.
    expect(real.code).toBe(1);
    expect(real.summary.outcome).toBe("partial");
    expect(real.summary.counts.sweeps_held).toBeGreaterThan(0);
    expect(real.summary.counts.access_revoked).toBeGreaterThan(0);
    expect(real.summary.counts.deleted).toBeGreaterThan(0);

    expect(dry.code).toBe(real.code);
    expect(dry.summary.outcome).toBe(real.summary.outcome);
    expect(dry.summary.dry_run.would_revoke).toBe(real.summary.counts.access_revoked);
    expect(dry.summary.dry_run.would_delete).toBe(real.summary.counts.deleted);
    expect(dry.summary.dry_run.revoke.map(accessKey)).toEqual(revoked);
    expect(dry.summary.dry_run.delete).toEqual(deleted);
    const held = dry.summary.dry_run.held_sweeps as { would_revoke: number }[];
    expect(held).toHaveLength(real.summary.counts.sweeps_held);
    // Each pair's rows, as the problems count them; held_revocations counts the keys, each once.
    const heldRows = held.reduce((n, s) => n + s.would_revoke, 0);
    const { problems } = JSON.parse((await h.cli(["problems", "--json"])).stdout) as ProblemsJson;
    const heldSweeps = problems.filter((p) => p.kind === "held_sweep");
    expect(heldSweeps.reduce((n, p) => n + (p.count ?? 0), 0)).toBe(heldRows);
    expect(real.summary.counts.held_revocations).toBeGreaterThan(0);
    expect(real.summary.counts.held_revocations).toBeLessThanOrEqual(heldRows);
    expect(dry.summary.message).toMatch(
      new RegExp(
        `the real pass would be partial: the mass-delete guard held the sweep of ${held.length} pair\\(s\\)`,
      ),
    );
  });

  it("with --allow-mass-delete predicts the whole sweep applied, and succeeds (exit 0) as the real pass does", async () => {
    h = await createHarness({ sim: { docs: 40 } });
    expect((await h.cli(["sync", "--json"])).code).toBe(0);
    await removeRandomDocs(0.7);

    const { dry, real, revoked, deleted } = await dryThenReal(["--allow-mass-delete"]);
    expect(real.code).toBe(0);
    expect(real.summary.outcome).toBe("succeeded");
    expect(real.summary.counts.deleted).toBeGreaterThan(0);

    expect(dry.code).toBe(0);
    expect(dry.summary.outcome).toBe("succeeded");
    expect(dry.summary.dry_run.held_sweeps).toEqual([]);
    expect(dry.summary.dry_run.would_revoke).toBe(real.summary.counts.access_revoked);
    expect(dry.summary.dry_run.would_delete).toBe(real.summary.counts.deleted);
    expect(dry.summary.dry_run.revoke.map(accessKey)).toEqual(revoked);
    expect(dry.summary.dry_run.delete).toEqual(deleted);
  });

  it("revokes nothing of a run with a row refused for its shape, and is partial with that error, as the real pass", async () => {
    proxy = await startRewritingProxy();
    h = await createHarness({ sim: { users: 1, docs: 10 }, api: { base_url: proxy.baseUrl } });
    proxy.target = h.sim.baseUrl;
    expect((await h.cli(["sync", "--json"])).code).toBe(0);
    /** The export's first page with its first resource missing its content_hash. */
    const reject = (body: string) => {
      const page = JSON.parse(body) as { resources: Record<string, unknown>[] };
      delete (page.resources[0] as Record<string, unknown>).content_hash;
      return JSON.stringify(page);
    };
    const pass = async (args: string[]) => {
      proxy!.rewrites[0] = reject;
      const r = await h.cli(["sync", "--full", "--json", ...args]);
      return { code: r.code, summary: JSON.parse(r.stdout).mirrors[0] };
    };
    const dry = await pass(["--dry-run"]);
    const real = await pass([]);
    expect(real.code).toBe(1);
    expect(real.summary).toMatchObject({ outcome: "partial", counts: { rejected: 1, access_revoked: 0 } });

    expect(dry.code).toBe(real.code);
    expect(dry.summary.outcome).toBe("partial");
    expect(dry.summary.dry_run).toMatchObject({ would_revoke: 0, would_delete: 0 });
    expect(dry.summary.errors).toEqual([
      expect.objectContaining({ error: expect.stringMatching(/^1 exported row\(s\) were rejected/) }),
    ]);
  });
});
