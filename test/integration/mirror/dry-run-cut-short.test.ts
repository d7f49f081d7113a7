/**
 * docs/reference/cli.md#sync-output: `sync --full --dry-run` writes nothing, even when it is cut
 * short and the next pass, a real one, finds its trigger in flight, or when it finds a real pass's.
 */
import { afterEach, describe, expect, it } from "vitest";
import { mirrorContents, pickDoc, resourceRow } from "../../helpers/mirror-db.js";
import { createHarness, expectedKeys, type Harness, visibleKeys } from "../../helpers/mirror-harness.js";

let h: Harness;
afterEach(async () => {
  await h?.close();
});

const EXPORT = "GET /sync-task/{sync_id}/export";

describe("a dry run cut short", () => {
  it("is finished as a dry run by the real pass that resumes it: nothing of it is swept as if ingested", async () => {
    h = await createHarness({ sim: { docs: 30, users: 2 } });
    await h.sync();
    const before = mirrorContents(h);
    // The token rejected on one run's first export page ends the dry run with its trigger in
    // flight, the other run already read (its keys compared, none of them ingested).
    h.sim.faults.inject(EXPORT, { kind: "401", times: 1 });
    const dry = await h.sync({ full: true, dryRun: true });
    expect(dry.outcome).toBe("failed");
    expect(h.query("SELECT state FROM triggers ORDER BY id")).toEqual([
      { state: "done" },
      { state: "active" },
    ]);

    const next = await h.sync();
    expect(next.finished_first).toMatchObject({ mode: "full", outcome: "succeeded" });
    expect(next).toMatchObject({ mode: "incremental", outcome: "succeeded", resumed: false });
    expect(next.counts).toMatchObject({ access_revoked: 0, deleted: 0 });
    expect(mirrorContents(h)).toEqual(before);
    for (const user of h.sim.users) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
    // Newest first: the real pass, the dry run it finished, the first pass.
    const history = JSON.parse((await h.cli(["history", "--json"])).stdout) as {
      passes: { dry_run: boolean }[];
    };
    expect(history.passes.map((p) => p.dry_run)).toEqual([false, true, false]);
  });
});

describe("a dry run that finds a real pass in flight", () => {
  it("leaves it for a real pass and writes nothing: failed, naming what to run", async () => {
    h = await createHarness({ sim: { docs: 30, users: 2 } });
    await h.sync();
    const crashed = await h.cli(["sync", "--full"], { SYNCMIRROR_CRASH_AT: "after-trigger-post" });
    expect(crashed.code, crashed.stderr).toBeNull();
    const doc = pickDoc(h, (d) => d.visibleTo.length > 0);
    h.sim.docs.remove(doc.docId);
    const before = mirrorContents(h);

    const dry = await h.sync({ full: true, dryRun: true });
    expect(dry.outcome).toBe("failed");
    expect(dry.message).toMatch(/a full pass is in flight .*run `syncmirror sync` to finish it/);
    expect(mirrorContents(h)).toEqual(before);
    expect(h.query("SELECT state FROM triggers ORDER BY id")).toEqual([
      { state: "done" },
      { state: "intent" },
    ]);

    const real = await h.sync({ full: true });
    expect(real).toMatchObject({ mode: "full", outcome: "succeeded", adopted: true, counts: { deleted: 1 } });
    expect(resourceRow(h, doc.key)?.deleted_at).not.toBeNull();
  });
  it("names an incremental pass in flight as one", async () => {
    h = await createHarness({ sim: { docs: 10, users: 1 } });
    await h.sync();
    const crashed = await h.cli(["sync"], { SYNCMIRROR_CRASH_AT: "after-trigger-post" });
    expect(crashed.code, crashed.stderr).toBeNull();
    const dry = await h.sync({ full: true, dryRun: true });
    expect(dry.message).toMatch(/^an incremental pass is in flight and a dry run writes nothing/);
  });
});
