/**
 * README's "A first mirror, by hand": its config, as printed, mirrors what `syncmirror simulate`
 * serves with its defaults (the same sync config id), and the commands after it work, through the
 * real CLI, real HTTP and a real SQLite file.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../../../src/simulator/index.js";
import { spawnCli } from "../../helpers/daemon.js";
import { buildOnce } from "../daemon/setup.js";

const README = readFileSync("README.md", "utf8");

function firstMirrorConfig(): string {
  const section = README.slice(README.indexOf("## A first mirror, by hand"));
  const block = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
  if (block === undefined) throw new Error("README's first-mirror section has no yaml block");
  return block;
}

let sim: Simulator | undefined;
let dir: string | undefined;
afterEach(async () => {
  await sim?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  sim = undefined;
  dir = undefined;
});

describe("README's first mirror", () => {
  it("names the sync config simulate serves by default, and sync then search work with it", async () => {
    buildOnce();
    sim = await startSimulator({ clock: { real: true } });
    const config = firstMirrorConfig();
    expect(config).toContain(`sync_config_id: ${sim.syncConfigId}`);
    dir = mkdtempSync(join(tmpdir(), "syncmirror-readme-"));
    const own = config.replace(/base_url: \S+/, `base_url: ${sim.baseUrl}`);
    writeFileSync(join(dir, "my.yaml"), own);
    const env = { PATH: process.env.PATH, SYNCMIRROR_API_TOKEN: sim.token, LOG_LEVEL: "warn" };

    const sync = await spawnCli(["sync", "--config", "my.yaml"], env, { cwd: dir }).exited;
    expect(sync.code).toBe(0);
    const search = spawnCli(
      ["search", "--config", "my.yaml", "--user", "user1@example.com", "roadmap"],
      env,
      {
        cwd: dir,
      },
    );
    const done = await search.exited;
    expect(done.code, search.stderr()).toBe(0);
    expect(search.stdout()).toContain("«roadmap»");
  });
});
