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
import { triggerPosts } from "../../helpers/requests.js";
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

/**
 * `sync --json` stopped by a signal, wherever the stop lands: stdout is still the one document, its
 * `error` the stop (`ABORTED`, naming the signal and how to resume), and stderr says the same in one
 * line. The next sync resumes the trigger the stopped one sent, with no second POST.
 */
describe("sync --json stopped by a signal", () => {
  function expectStopped(p: CliProcess, signal: string) {
    const document = JSON.parse(p.stdout());
    expect(document).toEqual({
      outcome: "not_all_succeeded",
      error: { code: "ABORTED", message: expect.stringContaining(`${signal} received`) },
      mirrors: [],
    });
    expect(document.error.message).toMatch(/run sync again to resume/);
    const lines = p.stderr().trimEnd().split("\n");
    expect(lines.filter((l) => !l.startsWith("{"))).toEqual([`syncmirror: ${document.error.message}`]);
  }

  it.runIf(process.platform === "linux")(
    "at start-up: exit 1, the stop as the document's error",
    async () => {
      const h = suite.use(await createHarness());
      const p = spawnCli(["sync", "--json", "--config", h.configPath], h.env);
      const exit = await stopAtStartup(p, "syncmirror sync");
      expect(exit, p.stderr()).toMatchObject({ code: 1, signal: null });
      expectStopped(p, "SIGTERM");
    },
  );

  it("while its runs are running: exit 1, the same error; the next sync resumes them, one POST", async () => {
    const h = suite.use(await createHarness({ sim: { lifecycle: "manual" } }));
    const p = spawnCli(["sync", "--json", "--config", h.configPath], h.env);
    await until(() => triggerPosts(h) === 1, "the trigger POST answered");
    const exit = await p.stop("SIGINT");
    expect(exit, p.stderr()).toMatchObject({ code: 1, signal: null });
    expectStopped(p, "SIGINT");
    h.sim.runs.finishAll();
    const again = await h.cli(["sync", "--json"]);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).mirrors).toEqual([
      expect.objectContaining({ outcome: "succeeded", resumed: true }),
    ]);
    expect(triggerPosts(h)).toBe(1);
  });
});

/**
 * SIGHUP ends a process on the spot unless handled: the daemon keeps running and says what a
 * reload would need; a one-shot command whose terminal hung up stops as on SIGTERM.
 */
describe("SIGHUP", () => {
  it("run: keeps running and serving, says a restart applies the config; SIGTERM then exits 0", async () => {
    const h = suite.use(await createHarness());
    const d = await suite.daemon(h);
    await until(() => d.logs().some((l) => l.msg === "daemon started"), "the daemon started");
    d.child.kill("SIGHUP");
    const said = await until(
      () => d.logs().find((l) => String(l.msg).startsWith("SIGHUP received and ignored")),
      "the daemon's answer to SIGHUP",
    );
    expect(said.level).toBe(40);
    expect((await d.get("/healthz")).status).toBe(200);
    expect(d.child.exitCode).toBeNull();
    expect(await d.stop("SIGTERM")).toMatchObject({ code: 0, signal: null });
  });

  it("sync: stops as on SIGTERM, exit 1; the next sync resumes its trigger, one POST", async () => {
    const h = suite.use(await createHarness({ sim: { lifecycle: "manual" } }));
    const p = spawnCli(["sync", "--json", "--config", h.configPath], h.env);
    await until(() => triggerPosts(h) === 1, "the trigger POST answered");
    const exit = await p.stop("SIGHUP");
    expect(exit, p.stderr()).toMatchObject({ code: 1, signal: null });
    expect(JSON.parse(p.stdout()).error.message).toContain("SIGHUP received");
    h.sim.runs.finishAll();
    expect((await h.cli(["sync"])).code).toBe(0);
    expect(triggerPosts(h)).toBe(1);
  });
});
