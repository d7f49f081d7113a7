/**
 * README's "A first mirror, by hand": its config, as printed, mirrors what `syncmirror simulate`
 * serves with its defaults (the same sync config id), and the commands after it, read from the
 * README as a newcomer copies them, work: through the real CLI, real HTTP and a real SQLite file.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../../../src/simulator/index.js";
import { httpGet, spawnCli, until, waitForPort } from "../../helpers/daemon.js";
import { buildOnce } from "../daemon/setup.js";

const README = readFileSync("README.md", "utf8");

function firstMirrorConfig(): string {
  const section = README.slice(README.indexOf("## A first mirror, by hand"));
  const block = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
  if (block === undefined) throw new Error("README's first-mirror section has no yaml block");
  return block;
}

/** The `node dist/cli.js ...` lines of the shell block after the config, as argument lists. */
function firstMirrorCommands(): string[][] {
  const section = README.slice(README.indexOf("## A first mirror, by hand"));
  const afterConfig = section.slice(section.indexOf("```yaml"));
  const block = /```sh\n([\s\S]*?)```/.exec(afterConfig)?.[1] ?? "";
  return block
    .split("\n")
    .map((line) => line.replace(/#.*$/, "").trim())
    .filter((line) => line.startsWith("node dist/cli.js "))
    .map((line) => line.split(/\s+/).slice(2));
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
  it("names the sync config simulate serves by default, and its commands work as written", async () => {
    buildOnce();
    const commands = firstMirrorCommands();
    expect(commands.map(([command]) => command)).toEqual(["check", "sync", "status", "search", "run"]);
    sim = await startSimulator({ clock: { real: true } });
    const config = firstMirrorConfig();
    expect(config).toContain(`sync_config_id: ${sim.syncConfigId}`);
    dir = mkdtempSync(join(tmpdir(), "syncmirror-readme-"));
    writeFileSync(join(dir, "my.yaml"), config.replace(/base_url: \S+/, `base_url: ${sim.baseUrl}`));
    const env = { PATH: process.env.PATH, SYNCMIRROR_API_TOKEN: sim.token, LOG_LEVEL: "warn" };

    for (const args of commands.filter(([command]) => command !== "run")) {
      const cli = spawnCli(args, env, { cwd: dir });
      const done = await cli.exited;
      expect(done.code, `${args.join(" ")}: ${cli.stderr()}`).toBe(0);
      if (args[0] === "search") expect(cli.stdout()).toContain("«roadmap»");
    }
    // The README's port is fixed; here the daemon takes a free one, where its `curl` would go.
    const listen = { ...env, LOG_LEVEL: "info", SYNCMIRROR_HTTP_LISTEN: "127.0.0.1:0" };
    const run = spawnCli(commands.at(-1) ?? [], listen, { cwd: dir });
    const port = await waitForPort(run);
    // The stored gauges are served once start-up has read them, which /readyz answers after.
    await until(async () => (await httpGet(port, "/readyz")).status === 200, "the daemon to be ready");
    const metrics = await httpGet(port, "/metrics");
    expect(README).toContain("| grep syncmirror_resources");
    expect(metrics.body).toMatch(/^syncmirror_resources\{mirror="sample"\} [1-9]/m);
    const stopped = await run.stop("SIGINT");
    expect(stopped.code, run.stderr()).toBe(0);
  });
});
