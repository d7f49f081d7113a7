/**
 * Export quirks: a key repeated across pages, engine_version changing between pages of one export,
 * a schema_version this syncmirror does not read. Each is stored consistently or refused whole,
 * and the state after recovery equals a clean run's over an identical simulator.
 */
import { afterEach, describe, expect, it, onTestFinished } from "vitest";
import { exitCodeFor } from "../../../src/sync/outcome.js";
import { databaseProblems, snapshot, snapshotDiff } from "../../helpers/db-snapshot.js";
import { proxiedHarness } from "../../helpers/rewriting-proxy.js";
import { counterValue, createTwins, ghostTrigger, type Twins } from "../../helpers/twins.js";

let twins: Twins | undefined;
afterEach(async () => {
  await twins?.close();
  twins = undefined;
});

/** One user and 700 documents: one run whose export has three pages of 250. */
const THREE_PAGES = { sim: { users: 1, docs: 700 } };

describe("export quirks", () => {
  it("a key repeated at the start of the next page is counted unchanged, stored once, changed once", async () => {
    twins = await createTwins(THREE_PAGES);
    const { clean, hurt } = twins;
    const reference = await clean.sync();
    hurt.sim.faults.quirk("repeat-key");

    const summary = await hurt.sync();
    expect(summary.outcome).toBe("succeeded");
    expect(summary.counts.upserted).toBe(reference.counts.upserted);
    expect(summary.counts.unchanged).toBe(reference.counts.unchanged + 1);
    expect(databaseProblems(hurt)).toEqual([]);
    expect(snapshotDiff(snapshot(hurt), snapshot(clean))).toEqual([]);
  });

  it("engine_version changing between pages: each row keeps its page's engine; the next pass converges", async () => {
    twins = await createTwins(THREE_PAGES);
    const { clean, hurt } = twins;
    expect((await clean.sync()).outcome).toBe("succeeded");
    hurt.sim.faults.quirk("engine-change");

    const summary = await hurt.sync();
    expect(summary.outcome).toBe("succeeded");
    const engines = hurt.query<{ engine_version: string; n: number }>(
      "SELECT engine_version, count(*) AS n FROM resources GROUP BY engine_version ORDER BY engine_version",
    );
    expect(engines).toEqual([
      { engine_version: "2", n: 250 },
      { engine_version: "3", n: expect.any(Number) },
    ]);
    expect(databaseProblems(hurt)).toEqual([]);

    // The service stays on the new engine: a full pass rewrites what page one stored under the old.
    clean.sim.setExportVersions({ engine_version: 3 });
    const again = await hurt.sync({ full: true });
    expect(again.outcome).toBe("succeeded");
    expect(again.counts.upserted).toBe(250);
    expect((await clean.sync({ full: true })).outcome).toBe("succeeded");
    const { changes: _h, ...hurtState } = snapshot(hurt);
    const { changes: _c, ...cleanState } = snapshot(clean);
    expect(snapshotDiff({ ...hurtState, changes: [] }, { ...cleanState, changes: [] })).toEqual([]);
  });

  it.each([1, "1", "1.0"])("reads schema_version %j", async (version) => {
    twins = await createTwins({ sim: { docs: 20 } });
    const { clean, hurt } = twins;
    hurt.sim.setExportVersions({ schema_version: version });
    expect((await clean.sync()).outcome).toBe("succeeded");
    expect((await hurt.sync()).outcome).toBe("succeeded");
    expect(snapshotDiff(snapshot(hurt), snapshot(clean))).toEqual([]);
  });

  it.each([2, "2.0", "v1", "1.x"])(
    "refuses schema_version %j: nothing written, the runs say why, exit 1; the next readable export recovers",
    async (version) => {
      twins = await createTwins({ sim: { docs: 30 } });
      const { clean, hurt } = twins;
      hurt.sim.setExportVersions({ schema_version: version });

      const summary = await hurt.sync();
      expect(summary.outcome).toBe("failed");
      expect(exitCodeFor([summary.outcome])).toBe(1);
      expect(summary.errors.length).toBe(hurt.sim.users.length);
      for (const e of summary.errors) {
        expect(e.error).toContain(`schema_version ${JSON.stringify(version)}`);
        expect(e.error).toMatch(
          /reads major version 1 only\. Upgrade syncmirror; nothing of this export was written/,
        );
      }
      expect(hurt.query("SELECT key FROM resources")).toEqual([]);
      expect(hurt.query("SELECT key FROM resource_access")).toEqual([]);
      expect(hurt.query("SELECT 1 FROM pairs WHERE watermark IS NOT NULL")).toEqual([]);
      expect(hurt.query("SELECT 1 FROM triggers WHERE state != 'done'")).toEqual([]);
      expect(await counterValue(hurt.metrics.triggers, { mode: "full", outcome: "failed" })).toBe(1);

      hurt.sim.setExportVersions({ schema_version: 1 });
      await ghostTrigger(clean);
      expect((await hurt.sync()).outcome).toBe("succeeded");
      expect((await clean.sync()).outcome).toBe("succeeded");
      expect(snapshotDiff(snapshot(hurt), snapshot(clean))).toEqual([]);
    },
  );

  it("a schema_version of another major from the second page on: the run fails, and its error says which rows were written", async () => {
    const { h, proxy } = await proxiedHarness(THREE_PAGES);
    onTestFinished(() => h.close());
    proxy.rewrites[1] = (body) => JSON.stringify({ ...JSON.parse(body), schema_version: 2 });

    const r = await h.cli(["sync", "--json"]);
    expect(r.code, r.stderr).toBe(1);
    const summary = JSON.parse(r.stdout).mirrors[0];
    expect(summary.outcome).toBe("partial");
    expect(summary.errors.map((e: { error: string }) => e.error)).toEqual([
      expect.stringMatching(
        /has schema_version 2 from offset 250 on; this syncmirror reads major version 1 only\. Upgrade syncmirror; nothing of this export from offset 250 on was written \(the rows before it were read as version 1\)/,
      ),
    ]);
    expect(h.query("SELECT key FROM resources")).toHaveLength(250);
    expect(h.query("SELECT 1 FROM pairs WHERE watermark IS NOT NULL")).toEqual([]);
    expect(databaseProblems(h)).toEqual([]);
  });
});
