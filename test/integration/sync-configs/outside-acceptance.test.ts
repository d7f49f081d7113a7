/**
 * Declared sync configs as a user outside the project meets them, through the CLI and the daemon
 * only: two mirrors declaring one name in one project however the project is written, and what
 * `--prune` does with a config whose mirror was renamed, or which was created again in place of
 * an adopted one deleted upstream.
 */
import { describe, expect, it } from "vitest";
import { DECLARED_SIM, managedRow, remoteNamed, wiki, writeMirrors } from "../../helpers/declared-configs.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { answered } from "../../helpers/requests.js";
import { daemonSuite, NEVER } from "../daemon/setup.js";

const suite = daemonSuite();

async function harness(): Promise<Harness> {
  const h = suite.use(
    await createHarness({ sim: DECLARED_SIM, defaults: { incremental_cron: NEVER, full_cron: NEVER } }),
  );
  writeMirrors(h, { main: wiki() });
  return h;
}

/** A file that no longer declares the adopted "Wiki": the plan's note, then `apply --prune`'s line. */
async function adoptedThenPruned(h: Harness, rename: (foreign: string) => Promise<void>) {
  const foreign = h.sim.configs.create({ name: "Wiki", instructions: "Someone else's." });
  expect((await h.cli(["apply", "--adopt"])).code).toBe(0);
  await rename(foreign);
  writeMirrors(h, { other: h.sim.syncConfigId });
  const plan = await h.cli(["plan"]);
  const pruned = await h.cli(["apply", "--prune"]);
  expect(pruned.code).toBe(0);
  return { foreign, plan: plan.stdout, pruned: pruned.stdout };
}

describe("declared sync configs from outside", () => {
  it("refuses two mirrors declaring one name in one project, the project named in one and implied in the other (exit 2, nothing sent)", async () => {
    const h = await harness();
    for (const copy of [{ project: "Acme" }, { project: h.sim.projectId }]) {
      writeMirrors(h, { main: wiki(), copy: wiki(copy) });
      for (const command of ["plan", "apply"]) {
        const r = await h.cli([command]);
        expect(r.code, `${command}: ${r.stdout}`).toBe(2);
        expect(r.stdout).toBe("");
        expect(r.stderr).toContain(
          'mirrors[1].sync_config.name: mirrors "main" and "copy" both mirror the sync config named "Wiki"',
        );
      }
    }
    expect(answered(h, "POST /sync-configs")).toBe(0);
  });

  it("deletes with --prune a config it created again after the one it adopted was deleted upstream", async () => {
    const h = await harness();
    let created = "";
    const { plan, pruned } = await adoptedThenPruned(h, async (foreign) => {
      h.sim.configs.remove(foreign);
      const recreated = await h.cli(["apply"]);
      expect(recreated.code).toBe(0);
      created = remoteNamed(h.sim, "Wiki").id;
      expect(recreated.stdout).toContain(`created sync config "Wiki" (${created})`);
      expect(managedRow(h)).toMatchObject({ sync_config_id: created, origin: "created", adopted_at: null });
    });
    expect(plan).toContain("syncmirror created it and no mirror declares it any more");
    expect(pruned).toContain('mirror main: deleted sync config "Wiki" upstream');
    expect(() => h.sim.configs.get(created)).toThrow(/404/);
  });

  it("releases with --prune, never deletes, a config it adopted for a mirror since renamed in the file", async () => {
    const h = await harness();
    const { foreign, plan, pruned } = await adoptedThenPruned(h, async (adopted) => {
      writeMirrors(h, { renamed: wiki() });
      expect((await h.cli(["apply"])).code).toBe(0);
      expect(managedRow(h, "renamed")).toMatchObject({ sync_config_id: adopted, origin: "adopted" });
    });
    expect(plan).toContain("syncmirror adopted it and no mirror declares it any more");
    expect(pruned).toContain('mirror renamed: released sync config "Wiki": left upstream');
    expect(h.sim.configs.get(foreign).instructions).toBe("Collect the wiki.");
  });
});
