/** docs/reference/sync-semantics.md#full-snapshots-and-sweeps: the mass-delete guard and delete_after_missed_full. */
import { afterEach, describe, expect, it } from "vitest";
import { accessRows, pickDoc, pickDocs, resourceRow } from "../../helpers/mirror-db.js";
import { createHarness, expectedKeys, type Harness, visibleKeys } from "../../helpers/mirror-harness.js";

let h: Harness;
afterEach(async () => {
  await h?.close();
});

const U1 = "user1@example.com";
const serverOf = (h: Harness, type: string) =>
  h.sim.servers.find((s) => s.source_type === type)?.server_instance_id ?? "";
const removeServerDocs = (h: Harness, serverId: string, share = 1) => {
  const docs = pickDocs(h, 0, (d) => d.server_instance_id === serverId && d.visibleTo.length > 0);
  const removed = docs.slice(0, Math.ceil(docs.length * share));
  for (const d of removed) h.sim.docs.remove(d.docId);
  return removed;
};

describe("mass-delete guard", () => {
  it("holds a sweep revoking most of a pair's keys until sync --full --allow-mass-delete", async () => {
    h = await createHarness({ sim: { docs: 80 } });
    await h.sync();
    const notion = serverOf(h, "notion");
    const accessBefore = accessRows(h);
    removeServerDocs(h, notion);

    const held = await h.sync({ full: true });
    expect(held.outcome).toBe("partial");
    expect(held.counts).toMatchObject({ access_revoked: 0, deleted: 0, sweeps_held: h.sim.users.length });
    // Held revocations are keys: a notion document every user sees counts once.
    const notionRows = accessBefore.filter((a) => a.server_instance_id === notion);
    const notionKeys = new Set(notionRows.map((a) => a.key)).size;
    expect(notionKeys).toBeLessThan(notionRows.length);
    expect(held.counts.held_revocations).toBe(notionKeys);
    expect(held.message).toMatch(/--allow-mass-delete/);
    expect(accessRows(h)).toEqual(accessBefore);
    expect(h.query("SELECT key FROM resources WHERE deleted_at IS NOT NULL")).toEqual([]);

    const status = JSON.parse((await h.cli(["status", "--json"])).stdout);
    expect(status.mirrors[0].held_revocations).toBe(held.counts.held_revocations);
    const again = await h.cli(["sync", "--full", "--json"]);
    expect(again.code, again.stderr).toBe(1);
    expect(JSON.parse(again.stdout).mirrors[0]).toMatchObject({ outcome: "partial" });
    expect(accessRows(h)).toEqual(accessBefore);

    const applied = await h.cli(["sync", "--full", "--allow-mass-delete", "--json"]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(JSON.parse(applied.stdout).mirrors[0].counts).toMatchObject({
      access_revoked: notionRows.length,
      held_revocations: 0,
    });
    for (const user of h.sim.users) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
    expect(h.query("SELECT held_revocations FROM mirror_state")).toEqual([{ held_revocations: 0 }]);
  });

  it("sync --full --dry-run names the pairs whose sweep the guard would hold, as the real pass then holds them", async () => {
    h = await createHarness({ sim: { docs: 80 } });
    await h.sync();
    const notion = serverOf(h, "notion");
    const notionRows = (user: string) =>
      accessRows(h).filter((a) => a.user_email === user && a.server_instance_id === notion).length;
    const expected = [...h.sim.users].sort().map((user) => ({
      user_email: user,
      server_instance_id: notion,
      would_revoke: notionRows(user),
      pair_keys: notionRows(user),
    }));
    const notionKeys = new Set(
      accessRows(h)
        .filter((a) => a.server_instance_id === notion)
        .map((a) => a.key),
    );
    removeServerDocs(h, notion);

    // Every notion sweep held: partial, exit 1, as the real pass.
    const json = await h.cli(["sync", "--full", "--dry-run", "--json"]);
    expect(json.code, json.stderr).toBe(1);
    const dry = JSON.parse(json.stdout).mirrors[0];
    expect(dry.outcome).toBe("partial");
    expect(dry.dry_run.held_sweeps).toEqual(expected);
    const text = await h.cli(["sync", "--full", "--dry-run"]);
    expect(text.code, text.stderr).toBe(1);
    const heldLines = text.stdout.split("\n").filter((l) => l.includes("mass-delete guard would hold"));
    expect(heldLines).toEqual(
      expected.map(
        (e) =>
          `  the mass-delete guard would hold the sweep of ${e.user_email} on ${notion} (${e.would_revoke} of the pair's ${e.pair_keys} access rows): a real sync --full holds it, then \`syncmirror approve-sweep\` or \`sync --full --allow-mass-delete\` applies it`,
      ),
    );
    // What the held sweeps would revoke is left out of the totals.
    expect(dry.dry_run).toMatchObject({ would_revoke: 0, would_delete: 0, revoke: [], delete: [] });

    // With --allow-mass-delete the dry run holds nothing, and counts more than the table shows:
    // the first 20, then how many more.
    const allowed = await h.cli(["sync", "--full", "--dry-run", "--allow-mass-delete", "--json"]);
    expect(allowed.code, allowed.stderr).toBe(0);
    const allowedDry = JSON.parse(allowed.stdout).mirrors[0].dry_run;
    expect(allowedDry.held_sweeps).toEqual([]);
    expect(allowedDry.would_revoke).toBe(expected.reduce((n, e) => n + e.would_revoke, 0));
    const allowedText = await h.cli(["sync", "--full", "--dry-run", "--allow-mass-delete"]);
    expect(allowedText.stdout).toContain(
      `    ... and ${allowedDry.would_revoke - 20} more (sync --full --dry-run --json lists up to 1000)`,
    );
    expect(allowedText.stdout.match(/^ {4}user\d+@example\.com {2}\S+$/gm)).toHaveLength(20);

    // The real pass holds exactly those.
    const held = await h.sync({ full: true });
    expect(held.counts.sweeps_held).toBe(expected.length);
    // Each pair's rows add up to more than the keys they hold back: a document several users see.
    expect(held.counts.held_revocations).toBe(notionKeys.size);
    expect(held.counts.held_revocations).toBeLessThan(expected.reduce((n, e) => n + e.would_revoke, 0));
  });

  it("applies a sweep of 10 keys or fewer even when it is most of the pair's keys", async () => {
    h = await createHarness({ sim: { docs: 20 } });
    await h.sync();
    const notion = serverOf(h, "notion");
    expect(
      accessRows(h).filter((a) => a.user_email === U1 && a.server_instance_id === notion).length,
    ).toBeLessThanOrEqual(10);
    removeServerDocs(h, notion);
    const s = await h.sync({ full: true });
    expect(s).toMatchObject({ outcome: "succeeded", counts: { held_revocations: 0 } });
    for (const user of h.sim.users) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
  });

  it("applies a sweep of more than 10 keys that stays under max_delete_fraction", async () => {
    h = await createHarness({ sim: { docs: 200, users: 1 } });
    await h.sync();
    const notion = serverOf(h, "notion");
    const removed = removeServerDocs(h, notion, 0.2);
    expect(removed.length).toBeGreaterThan(10);
    const s = await h.sync({ full: true });
    expect(s).toMatchObject({
      outcome: "succeeded",
      counts: { deleted: removed.length, held_revocations: 0 },
    });
  });
});

describe("delete_after_missed_full", () => {
  it("revokes only after two full snapshots in a row missed the key", async () => {
    h = await createHarness({ sim: { docs: 20 }, defaults: { delete_after_missed_full: 2 } });
    await h.sync();
    const doc = pickDoc(h, (d) => d.visibleTo.length > 0);
    h.sim.docs.remove(doc.docId);

    const once = await h.sync({ full: true });
    expect(once.counts.access_revoked).toBe(0);
    expect(resourceRow(h, doc.key)?.deleted_at).toBeNull();
    expect(accessRows(h, doc.key)).toHaveLength(doc.visibleTo.length);

    const twice = await h.sync({ full: true });
    expect(twice.counts).toMatchObject({ access_revoked: doc.visibleTo.length, deleted: 1 });
    expect(resourceRow(h, doc.key)?.deleted_at).not.toBeNull();
  });

  it("starts the count again when an incremental sees the key between two misses", async () => {
    h = await createHarness({ sim: { docs: 20 }, defaults: { delete_after_missed_full: 2 } });
    await h.sync();
    const doc = pickDoc(h, (d) => d.visibleTo.includes(U1));
    const others = doc.visibleTo.filter((u) => u !== U1);
    const hide = () => h.sim.docs.setVisibility(doc.docId, others);
    const userKeys = () => accessRows(h, doc.key).map((a) => a.user_email);

    hide();
    await h.sync({ full: true });
    expect(userKeys()).toContain(U1);
    // Seen again (an edit makes the incremental export it), then missed once more.
    h.sim.docs.setVisibility(doc.docId, doc.visibleTo);
    h.sim.docs.edit(doc.docId);
    const seen = await h.sync();
    expect(seen.mode).toBe("incremental");
    hide();
    await h.sync({ full: true });
    expect(userKeys()).toContain(U1);
    await h.sync({ full: true });
    expect(userKeys()).not.toContain(U1);
  });
});
