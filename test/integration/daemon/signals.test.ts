/**
 * SIGTERM is honoured in every state, start-up included: the handlers are in place before the
 * commands load (config, migrations, lock), so a stop then is a clean exit, not a kill.
 * The test sends the signal as soon as `ps` shows the command (the CLI sets its process title
 * right after installing the handlers), i.e. while the command's modules are still loading.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { type CliProcess, spawnCli, until } from "../../helpers/daemon.js";
import { createHarness } from "../../helpers/mirror-harness.js";
import { daemonSuite } from "./setup.js";

const suite = daemonSuite();

function cmdline(pid: number | undefined): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return "";
  }
}

async function stopAtStartup(p: CliProcess, title: string) {
  await until(() => cmdline(p.child.pid).startsWith(title), `the process title "${title}"`);
  return p.stop("SIGTERM");
}

describe.runIf(process.platform === "linux")("SIGTERM at start-up", () => {
  it("run: exits 0, not killed by the signal", async () => {
    const h = suite.use(await createHarness());
    const p = spawnCli(["run", "--config", h.configPath], { ...h.env, LOG_LEVEL: "info" });
    const exit = await stopAtStartup(p, "syncmirror run");
    expect(exit, p.stderr()).toMatchObject({ code: 0, signal: null });
    expect(h.sim.requests.filter((r) => r.method === "POST")).toEqual([]);
  });

  it("sync: exits 1 (not every mirror had its pass) and says how to resume", async () => {
    const h = suite.use(await createHarness());
    const p = spawnCli(["sync", "--config", h.configPath], { ...h.env, LOG_LEVEL: "info" });
    const exit = await stopAtStartup(p, "syncmirror sync");
    expect(exit, p.stderr()).toMatchObject({ code: 1, signal: null });
    expect(p.stderr()).toMatch(/SIGTERM received|run sync again/);
  });
});
