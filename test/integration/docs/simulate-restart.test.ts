/**
 * README's first mirror, the next day: `simulate` stopped (Ctrl-C) and started again, and the same
 * config and mirror database synced against it. The restarted simulator keeps its sync config id
 * (the config file still names it) but must hand out trigger and run ids the kept mirror has not
 * stored, as a real service does; reused ones made every later pass fail on the mirror's own keys.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type CliProcess, spawnCli, until } from "../../helpers/daemon.js";
import { buildOnce } from "../daemon/setup.js";

const ENV = { PATH: process.env.PATH, LOG_LEVEL: "warn" };

let sims: CliProcess[] = [];
let dir: string | undefined;
afterEach(async () => {
  for (const sim of sims) await sim.stop("SIGINT");
  if (dir) rmSync(dir, { recursive: true, force: true });
  sims = [];
  dir = undefined;
});

async function startSimulate(): Promise<{ sim: CliProcess; baseUrl: string; token: string }> {
  const sim = spawnCli(["simulate"], ENV);
  sims.push(sim);
  const out = await until(
    () => (sim.stdout().includes("sync_config_id: ") ? sim.stdout() : undefined),
    "the banner",
  );
  return {
    sim,
    baseUrl: /base_url: (\S+)/.exec(out)?.[1] ?? "",
    token: /token: (\S+)/.exec(out)?.[1] ?? "",
  };
}

describe("simulate restarted beside a kept mirror", () => {
  it("syncs the same config and database again, exit 0", async () => {
    buildOnce();
    dir = mkdtempSync(join(tmpdir(), "syncmirror-restart-"));
    const first = await startSimulate();
    const env = { ...ENV, SYNCMIRROR_API_TOKEN: first.token };
    const init = spawnCli(["init", "--simulator", first.baseUrl, "--config", "my.yaml"], env, { cwd: dir });
    expect((await init.exited).code, init.stderr()).toBe(0);
    const sync = spawnCli(["sync", "--config", "my.yaml"], env, { cwd: dir });
    expect((await sync.exited).code, sync.stderr()).toBe(0);
    expect((await first.sim.stop("SIGINT")).code).toBe(0);

    const second = await startSimulate();
    const config = join(dir, "my.yaml");
    writeFileSync(config, readFileSync(config, "utf8").replaceAll(first.baseUrl, second.baseUrl));
    const again = spawnCli(
      ["sync", "--config", "my.yaml"],
      { ...ENV, SYNCMIRROR_API_TOKEN: second.token },
      { cwd: dir },
    );
    const exit = await again.exited;
    expect(exit.code, again.stderr()).toBe(0);
    expect(again.stdout()).toMatch(/all-servers-all-users\s+incremental\s+succeeded/);
  });
});
