/**
 * The commands table of docs/reference/cli.md, black-box through the built CLI, where the other
 * suites leave it open: bad usage is one line saying what to give (an option missing its value
 * included, whatever follows it), init finds its file where every command does, simulate takes its
 * port and users and stops on SIGINT, and `--json` stdout holds one document however verbose the logs.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, parseLogLines, spawnCli, until } from "../../helpers/daemon.js";
import { createHarness } from "../../helpers/mirror-harness.js";
import { buildOnce } from "../daemon/setup.js";

const STACK = /\n\s+at |node:internal/;

let dir: string;
beforeAll(() => {
  buildOnce();
  dir = mkdtempSync(join(tmpdir(), "syncmirror-commands-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The CLI in an empty directory (no config/syncmirror.yaml) with no $SYNCMIRROR_CONFIG. */
async function cli(args: string[], env: Record<string, string | undefined> = {}) {
  const p = spawnCli(
    args,
    { ...process.env, SYNCMIRROR_CONFIG: undefined, LOG_LEVEL: "warn", ...env },
    { cwd: dir },
  );
  const { code } = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

describe("bad usage", () => {
  const CASES: [string[], string][] = [
    [["frob"], 'syncmirror: unknown command "frob": `syncmirror --help` lists the commands'],
    [["sync", "--mirror"], "syncmirror: --mirror needs a value: --mirror NAME"],
    [["sync", "--mirror", "--full"], "syncmirror: --mirror needs a value: --mirror NAME"],
    [["status", "--config", "--json"], "syncmirror: --config needs a value: --config FILE"],
    [["history", "--mirror", "--json"], "syncmirror: --mirror needs a value: --mirror NAME"],
    [["copy-store", "--from", "--config", "x.yaml"], "syncmirror: --from needs a value: --from SQLITE_PATH"],
    [["init", "--simulator", "--config", "x.yaml"], "syncmirror: --simulator needs a value: --simulator URL"],
    [["simulate", "--port", "--docs", "5"], "syncmirror simulate: --port needs a value: --port N"],
    // One value only: the last one, taken silently, would pause one mirror of the two named.
    [["pause", "--mirror", "a", "--mirror", "b"], "syncmirror: --mirror: given more than once"],
    [["approve-sweep", "--mirror", "a", "--mirror=a"], "syncmirror: --mirror: given more than once"],
    // Each control says the same of a missing mirror, before any config is read.
    [["pause"], "syncmirror: pause needs --mirror NAME"],
    [["approve-sweep", "--json"], "syncmirror: approve-sweep needs --mirror NAME"],
    [["history", "--limit", "5", "--json", "--limit", "50"], "syncmirror: --limit: given more than once"],
    [["status", "--config", "a.yaml", "--config", "x.yaml"], "syncmirror: --config: given more than once"],
  ];

  it("an unknown command, an option without its value or given twice: exit 2, one line saying what to give, nothing on stdout, nothing started", async () => {
    const results = await Promise.all(CASES.map(([args]) => cli(args)));
    for (const [i, r] of results.entries()) {
      const [args, line] = CASES[i] as [string[], string];
      const what = args.join(" ");
      expect(r.code, what).toBe(2);
      expect(r.stdout, what).toBe("");
      expect(r.stderr, what).not.toMatch(STACK);
      const lines = r.stderr.trimEnd().split("\n");
      expect(lines, what).toHaveLength(1);
      // After what to give, at most the command's usage and where the rest is.
      const [only] = lines as [string];
      if (only !== line) {
        expect(only.startsWith(`${line} (usage: syncmirror ${args[0]} `), what).toBe(true);
        expect(only.endsWith(`; syncmirror ${args[0]} --help lists every option)`), what).toBe(true);
      }
    }
    expect(existsSync(join(dir, "x.yaml"))).toBe(false);
  });

  it("reads --config given before the command as given after it", async () => {
    for (const args of [
      ["--config", join(dir, "none.yaml"), "status"],
      [`--config=${join(dir, "none.yaml")}`, "status"],
    ]) {
      const r = await cli(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toMatch(
        /^syncmirror: .*none\.yaml: invalid config: \(root\): no such file/,
      );
    }
  });
});

describe("init", () => {
  it("writes to $SYNCMIRROR_CONFIG when --config is not given, and never overwrites it (exit 1)", async () => {
    const env = { SYNCMIRROR_CONFIG: join(dir, "from-env", "mirror.yaml") };
    const first = await cli(["init"], env);
    expect(first.code, first.stderr).toBe(0);
    expect(existsSync(join(dir, "config"))).toBe(false);
    const written = readFileSync(env.SYNCMIRROR_CONFIG, "utf8");
    const again = await cli(["init"], env);
    expect(again.code).toBe(1);
    expect(again.stderr.trimEnd().split("\n")).toEqual([
      expect.stringMatching(/already exists and init never overwrites a file: .*--config FILE$/),
    ]);
    expect(readFileSync(env.SYNCMIRROR_CONFIG, "utf8")).toBe(written);
  });
});

describe("simulate", () => {
  it("--port, --users and --docs are what it serves; SIGINT stops it with 0 and frees the port", async () => {
    const port = await freePort();
    const sim = spawnCli(["simulate", "--port", String(port), "--users", "5", "--docs", "7", "--seed", "9"], {
      ...process.env,
      LOG_LEVEL: "warn",
    });
    try {
      const out = await until(
        () => (/sync_config_id: \S+\n/.test(sim.stdout()) ? sim.stdout() : undefined),
        "the banner",
      );
      const baseUrl = /base_url: (\S+)/.exec(out)?.[1];
      const token = /token: (\S+)/.exec(out)?.[1];
      const configId = /sync_config_id: (\S+)/.exec(out)?.[1];
      expect(baseUrl).toBe(`http://127.0.0.1:${port}/api/v1`);
      const access = await fetch(`${baseUrl}/sync-configs/${configId}/access`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(access.status).toBe(200);
      expect(((await access.json()) as { items: unknown[] }).items).toHaveLength(5);
      expect(out).toMatch(/docs: 7\b/);

      expect(await sim.stop("SIGINT")).toMatchObject({ code: 0, signal: null });
      await expect(fetch(`${baseUrl}/projects`)).rejects.toThrow();
    } finally {
      await sim.stop("SIGKILL");
    }
  });
});

describe("--json with every log line enabled", () => {
  it("sync --json and status --json: stdout is one JSON document, stderr JSON lines only, for exit 0 and exit 1", async () => {
    const h = await createHarness({ sim: { docs: 10 } });
    try {
      const trace = { LOG_LEVEL: "trace" };
      const expectJsonOnly = (r: { stdout: string; stderr: string }) => {
        expect(() => JSON.parse(r.stdout), r.stdout).not.toThrow();
        expect(parseLogLines(r.stderr).length).toBeGreaterThan(0);
      };
      const ok = await h.cli(["sync", "--json"], trace);
      expect(ok.code, ok.stderr).toBe(0);
      expectJsonOnly(ok);

      h.sim.setOutcome({ user: "user1@example.com" }, { task: "FAILED" });
      const partial = await h.cli(["sync", "--json"], trace);
      expect(partial.code).toBe(1);
      expectJsonOnly(partial);
      expect(JSON.parse(partial.stdout).mirrors[0].outcome).toBe("partial");

      // status reports the problem and still exits 0.
      const status = await h.cli(["status", "--json"], trace);
      expect(status.code, status.stderr).toBe(0);
      expect(() => JSON.parse(status.stdout)).not.toThrow();
      expect(JSON.parse(status.stdout).mirrors[0]).toMatchObject({ mirror: "main", last_outcome: "partial" });
      parseLogLines(status.stderr);
    } finally {
      await h.close();
    }
  });
});
