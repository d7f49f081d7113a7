/**
 * Several mirrors whose sync configs share servers and users, so the same keys arrive through
 * each: what `sync --full --dry-run` predicts and writes, a tombstone brought back through both,
 * the per-mirror metrics, and one mirror refused while the other finishes its pass.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { changes, lastSeq, pickDoc, resourceRow } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { buildOnce, editConfig } from "../daemon/setup.js";

let h: Harness;
beforeAll(buildOnce);
afterEach(async () => {
  await h?.close();
});

const [U1, U2] = ["user1@example.com", "user2@example.com"];

// biome-ignore lint/suspicious/noExplicitAny: the printed summary is read loosely, shapes are asserted
type Json = any;

/** Mirrors `one` (a config of U1 only) and `all` (every user), over every server, in that order. */
async function twoMirrorConfigs(): Promise<void> {
  h = await createHarness({ sim: { docs: 30 } });
  const onlyU1 = h.sim.configs.create({ name: "only-u1", userEmails: [U1] });
  editConfig(h, (config) => {
    config.mirrors = [
      { name: "one", sync_config_id: onlyU1 },
      { name: "all", sync_config_id: h.sim.syncConfigId },
    ];
  });
}

/** `twoMirrorConfigs`, both synced once by the CLI. */
async function twoMirrors(): Promise<void> {
  await twoMirrorConfigs();
  expect((await sync()).code).toBe(0);
}

async function sync(...args: string[]): Promise<{ code: number | null; out: Json; of: (m: string) => Json }> {
  const r = await h.cli(["sync", "--json", ...args]);
  expect(r.stdout, r.stderr).not.toBe("");
  const out = JSON.parse(r.stdout);
  return { code: r.code, out, of: (m) => out.mirrors.find((s: Json) => s.mirror === m) };
}

/** Every public table, the pairs and the dry run's scratch rows, to compare before and after. */
function tables(): unknown {
  return {
    scratch: h.query(
      "SELECT (SELECT count(*) FROM dry_run_seen) AS seen, (SELECT count(*) FROM dry_run_revoke) AS revoke",
    ),
    resources: h.query("SELECT * FROM resources ORDER BY key"),
    access: h.query("SELECT * FROM resource_access ORDER BY mirror, user_email, key"),
    changes: h.query("SELECT * FROM changes ORDER BY seq"),
    pairs: h.query("SELECT * FROM pairs ORDER BY mirror, user_email, server_instance_id"),
  };
}

describe("sync --full --dry-run over several mirrors", () => {
  it("predicts the delete the real sync --full makes in the last mirror's sweep, and writes nothing", async () => {
    await twoMirrors();
    const doc = pickDoc(h, (d) => d.visibleTo.includes(U1));
    h.sim.docs.remove(doc.docId);
    const before = tables();

    const dry = await sync("--full", "--dry-run");
    expect(dry.code).toBe(0);
    expect(tables()).toEqual(before);

    const real = await sync("--full");
    expect(real.code).toBe(0);
    const deleted = ["one", "all"].map((m) => real.of(m).counts.deleted);
    expect(deleted).toEqual([0, 1]);
    expect(["one", "all"].map((m) => dry.of(m).dry_run.delete)).toEqual([[], [doc.key]]);
  });
});

describe("the change feed with two mirrors", () => {
  it("brings a tombstone back with one upsert when both mirrors see it again in one sync", async () => {
    await twoMirrors();
    const doc = pickDoc(h, (d) => d.visibleTo.includes(U1));
    const visibleTo = doc.visibleTo;
    h.sim.docs.setVisibility(doc.docId, []);
    expect((await sync("--full")).code).toBe(0);
    expect(resourceRow(h, doc.key)?.deleted_at).not.toBeNull();
    h.sim.docs.setVisibility(doc.docId, visibleTo);
    h.sim.docs.edit(doc.docId);
    const before = lastSeq(h);
    expect((await sync()).code).toBe(0);
    expect(resourceRow(h, doc.key)?.deleted_at).toBeNull();
    const ops = changes(h, before)
      .filter((c) => c.key === doc.key)
      .map((c) => c.op);
    expect(ops.filter((o) => o === "upsert")).toHaveLength(1);
    expect(ops[0]).toBe("upsert");
    expect(ops).not.toContain("delete");
  });
});

describe("per-mirror metrics", () => {
  it("counts each mirror's own live resources, revocations and deletes", async () => {
    await twoMirrorConfigs();
    await h.sync({ mirror: "one" });
    await h.sync({ mirror: "all" });
    const live = (m: string) =>
      h.query<{ n: number }>(
        `SELECT count(DISTINCT a.key) AS n FROM resource_access a JOIN resources r ON r.key = a.key
         WHERE a.mirror = ? AND r.deleted_at IS NULL`,
        m,
      )[0]?.n;
    const value = async (metric: "resources" | "resourcesDeleted" | "accessRevoked", m: string) =>
      (await h.metrics[metric].get()).values.find((v) => v.labels.mirror === m)?.value ?? 0;
    const u1Keys = h.sim.docs.list().filter((d) => !d.deleted && d.visibleTo.includes(U1)).length;
    const allKeys = h.sim.docs.list().filter((d) => !d.deleted && d.visibleTo.length > 0).length;
    expect(u1Keys).toBeLessThan(allKeys);
    expect([await value("resources", "one"), await value("resources", "all")]).toEqual([u1Keys, allKeys]);

    const doc = pickDoc(h, (d) => d.visibleTo.includes(U1) && d.visibleTo.includes(U2));
    h.sim.docs.remove(doc.docId);
    await h.sync({ mirror: "one", full: true });
    expect(await value("resources", "one")).toBe(u1Keys - 1);
    expect(await value("resources", "all")).toBe(allKeys);
    expect(await value("accessRevoked", "one")).toBe(1);
    expect(await value("resourcesDeleted", "one")).toBe(0);

    await h.sync({ mirror: "all", full: true });
    expect(await value("resources", "all")).toBe(allKeys - 1);
    expect(await value("accessRevoked", "all")).toBe(doc.visibleTo.length);
    expect(await value("resourcesDeleted", "all")).toBe(1);
    expect(await value("resourcesDeleted", "one")).toBe(0);
    expect([live("one"), live("all")]).toEqual([u1Keys - 1, allKeys - 1]);
  });
});

describe("sync over several mirrors, one refused", () => {
  it("resumes the mirror whose trigger is in flight while premium is off, refuses the other: exit 1", async () => {
    await twoMirrors();
    const left = await h.cli(["sync", "--mirror", "all"], { SYNCMIRROR_CRASH_AT: "after-trigger-post:1" });
    expect(left.code).not.toBe(0);
    h.sim.setPremium(false);
    const posts = h.sim.requests.filter((r) => r.method === "POST").length;
    const s = await sync();
    expect(s.code).toBe(1);
    expect(h.sim.requests.filter((r) => r.method === "POST").length, "one refused trigger").toBe(posts + 1);
    expect(s.out.mirrors.map((m: Json) => [m.mirror, m.outcome])).toEqual([
      ["one", "refused"],
      ["all", "succeeded"],
    ]);
  });
});
