/**
 * Declared sync configs as a user outside the project meets them, through the CLI and the daemon
 * only: two mirrors declaring one name in one project however the project is written.
 */
import { describe, expect, it } from "vitest";
import { DECLARED_SIM, wiki, writeMirrors } from "../../helpers/declared-configs.js";
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
});
