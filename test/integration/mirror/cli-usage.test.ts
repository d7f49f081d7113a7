/**
 * The CLI's usage promises: every command answers `--help` / `-h` with its usage, each flag with
 * its default, the exit codes and an example, and exits 0; `--version`; no arguments is a usage
 * error (exit 2); an unknown flag names itself and prints the usage line.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { spawnCli } from "../../helpers/daemon.js";
import { buildOnce } from "../daemon/setup.js";

const COMMANDS = ["run", "sync", "status", "check", "demo", "simulate"];

async function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = spawnCli(args, { PATH: process.env.PATH });
  const { code } = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

beforeAll(buildOnce);

describe("syncmirror usage", () => {
  it.each(COMMANDS)(
    "%s --help and -h: usage, options with defaults, exit codes, an example; exit 0",
    async (name) => {
      for (const flag of ["--help", "-h"]) {
        const r = await cli([name, flag]);
        expect(r.code, `${name} ${flag}: ${r.stderr}`).toBe(0);
        expect(r.stdout).toMatch(new RegExp(`^usage: syncmirror ${name}`));
        expect(r.stdout).toMatch(/\noptions:\n/);
        expect(r.stdout).toMatch(/\nexit: 0/);
        expect(r.stdout).toMatch(/\nexample: .*syncmirror/);
        expect(r.stdout).toContain("-h, --help");
      }
    },
  );

  it("sync --help gives every flag its default", async () => {
    const { stdout } = await cli(["sync", "--help"]);
    for (const flag of [
      "--mirror NAME",
      "--full",
      "--dry-run",
      "--allow-mass-delete",
      "--json",
      "--config FILE",
    ]) {
      const line = stdout.split("\n").find((l) => l.trimStart().startsWith(flag));
      expect(line, flag).toMatch(/default/);
    }
  });

  it("--version prints the package version", async () => {
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, "..", "..", "..", "package.json"), "utf8"));
    const r = await cli(["--version"]);
    expect(r).toMatchObject({ code: 0, stdout: `syncmirror ${pkg.version}\n` });
  });

  it("no arguments: the overview on stderr, exit 2; --help: the overview on stdout, exit 0", async () => {
    const none = await cli([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^usage: syncmirror <command>/);
    for (const name of COMMANDS) expect(none.stderr).toContain(`  ${name} `);
    const help = await cli(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toBe(none.stderr);
  });

  it.each(["sync", "status", "check", "init"])(
    "%s --config with an empty value (an unset shell variable): exit 2 saying --config needs a file",
    async (name) => {
      for (const args of [["--config", ""], ["--config="]]) {
        const r = await cli([name, ...args]);
        expect(r.code, r.stderr).toBe(2);
        expect(r.stderr).toBe(
          "syncmirror: --config: is empty: give the config file's path, or leave --config out to use $SYNCMIRROR_CONFIG, then config/syncmirror.yaml\n",
        );
      }
    },
  );

  it("simulate with a negative number: exit 2 naming the flag and its range, not how to quote a dash", async () => {
    const r = await cli(["simulate", "--docs", "-1"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /^syncmirror simulate: --docs must be an integer from 0 to 10000000, got "-1" \(usage: [^\n]*\)\n$/,
    );
  });

  it.each(["sync", "status", "simulate"])(
    "%s with an unknown flag: exit 2, the flag named, the usage line",
    async (name) => {
      const r = await cli([name, "--frobnicate"]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("--frobnicate");
      expect(r.stderr).toContain(`usage: syncmirror ${name}`);
      expect(r.stderr).toContain(`syncmirror ${name} --help`);
    },
  );
});
