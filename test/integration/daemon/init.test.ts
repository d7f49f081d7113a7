/**
 * `syncmirror init` through the real CLI against a real simulator on loopback: the config it writes
 * passes `check` and `sync` as written; it never overwrites a file; without --simulator it writes
 * placeholders that `check` names; bad usage exits 2 and writes nothing.
 */
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../../../src/simulator/index.js";
import { type CliProcess, spawnCli } from "../../helpers/daemon.js";
import { buildOnce } from "./setup.js";

let sim: Simulator | undefined;
let dir: string | undefined;
let child: CliProcess | undefined;
beforeAll(buildOnce);
afterEach(async () => {
  // A hung init ignores SIGTERM.
  await child?.stop("SIGKILL");
  child = undefined;
  await sim?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  sim = undefined;
  dir = undefined;
});

async function setUp(): Promise<{ sim: Simulator; dir: string; env: Record<string, string | undefined> }> {
  sim = await startSimulator({ docs: 20 });
  dir = mkdtempSync(join(tmpdir(), "syncmirror-init-"));
  const env: Record<string, string | undefined> = {
    ...process.env,
    SYNCMIRROR_API_TOKEN: sim.token,
    LOG_LEVEL: "warn",
  };
  delete env.SYNCMIRROR_CONFIG;
  return { sim, dir, env };
}

async function run(args: string[], env: Record<string, string | undefined>, cwd: string) {
  const p = spawnCli(args, env, { cwd });
  const { code } = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

describe("syncmirror init", () => {
  it("against a simulator writes a config that check and sync accept as written, and refuses a second time", async () => {
    const { sim, dir, env } = await setUp();
    const other = sim.configs.create({ name: "Sales drive" });
    const origin = new URL(sim.baseUrl).origin;

    const init = await run(["init", "--simulator", origin, "--config", "my.yaml"], env, dir);
    expect(init.code, init.stderr).toBe(0);
    expect(init.stdout).toContain(
      `wrote my.yaml: mirror all-servers-all-users of sync config ${sim.syncConfigId}`,
    );
    const written = readFileSync(join(dir, "my.yaml"), "utf8");
    expect(written).toContain(`  base_url: ${sim.baseUrl}\n`);
    expect(written).toContain(
      `  # - name: sales-drive   # sync config "Sales drive"\n  #   sync_config_id: ${other}\n`,
    );
    expect(written).not.toContain(sim.token);

    const check = await run(["check", "--config", "my.yaml"], env, dir);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toContain("no problems found");
    const sync = await run(["sync", "--json", "--config", "my.yaml"], env, dir);
    expect(sync.code, sync.stderr).toBe(0);
    expect(JSON.parse(sync.stdout).mirrors[0]).toMatchObject({
      mirror: "all-servers-all-users",
      outcome: "succeeded",
    });
    expect(existsSync(join(dir, "data", "mirror.db"))).toBe(true);

    const again = await run(["init", "--simulator", sim.baseUrl, "--config", "my.yaml"], env, dir);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(
      "syncmirror: my.yaml already exists and init never overwrites a file: edit it, remove it first, or name another file with --config FILE\n",
    );
    expect(readFileSync(join(dir, "my.yaml"), "utf8")).toBe(written);
  });

  it("takes the simulator's base_url as well as its root", async () => {
    const { sim, dir, env } = await setUp();
    const r = await run(["init", "--simulator", `${sim.baseUrl}/`, "--config", "a.yaml"], env, dir);
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(join(dir, "a.yaml"), "utf8")).toContain(`  base_url: ${sim.baseUrl}\n`);
  });

  it("without --simulator writes placeholders at the default path, which check names until replaced", async () => {
    const { dir, env } = await setUp();
    const init = await run(["init"], env, dir);
    expect(init.code, init.stderr).toBe(0);
    expect(init.stdout).toContain("wrote config/syncmirror.yaml: a template with placeholders");
    const check = await run(["check"], env, dir);
    expect(check.code).toBe(2);
    expect(check.stderr).toContain(
      "api.base_url: still holds a REPLACE-WITH placeholder (as syncmirror init and the shipped deploy config write them): put the service's API base URL there",
    );
    expect(check.stderr).toContain(
      "mirrors[0].sync_config_id: still holds a REPLACE-WITH placeholder (as syncmirror init and the shipped deploy config write them)",
    );
    const existing = join(dir, "config", "syncmirror.yaml");
    writeFileSync(existing, "# mine\n");
    expect((await run(["init"], env, dir)).code).toBe(1);
    expect(readFileSync(existing, "utf8")).toBe("# mine\n");
  });

  it("writes a config no other user can change, even under umask 000: it says where the token is sent", async () => {
    const { dir, env } = await setUp();
    const p = spawnCli(["init", "--config", "new/nested/syncmirror.yaml"], env, {
      cwd: dir,
      prelude: "umask 000",
    });
    expect((await p.exited).code, p.stderr()).toBe(0);
    const modes = ["new", "new/nested", "new/nested/syncmirror.yaml"].map((f) => [
      f,
      statSync(join(dir, f)).mode & 0o777,
    ]);
    expect(modes).toEqual([
      ["new", 0o755],
      ["new/nested", 0o755],
      ["new/nested/syncmirror.yaml", 0o644],
    ]);
  });

  it("bad usage exits 2 and writes nothing: not a URL, no token, an unknown option", async () => {
    const { sim, dir, env } = await setUp();
    const cases: [string[], Record<string, string | undefined>, RegExp][] = [
      [["init", "--simulator", "127.0.0.1 8080"], env, /--simulator: "127.0.0.1 8080" is not a URL/],
      [
        ["init", "--simulator", sim.baseUrl],
        { ...env, SYNCMIRROR_API_TOKEN: undefined },
        /SYNCMIRROR_API_TOKEN is not set/,
      ],
      [
        ["init", "--simulator", sim.baseUrl],
        { ...env, SYNCMIRROR_API_TOKEN: "wrong-token" },
        /--simulator .*was rejected \(401/,
      ],
      [["init", "--force"], env, /unknown option --force /],
    ];
    for (const [args, caseEnv, message] of cases) {
      const r = await run([...args, "--config", "x.yaml"], caseEnv, dir);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(existsSync(join(dir, "x.yaml"))).toBe(false);
    }
  });

  it("a wrong token or nothing at --simulator: the message points at simulate's token or address, not at a config key", async () => {
    const { sim, dir, env } = await setUp();
    const rejected = await run(
      ["init", "--simulator", sim.baseUrl, "--config", "x.yaml"],
      { ...env, SYNCMIRROR_API_TOKEN: "wrong-token" },
      dir,
    );
    expect(rejected.code).toBe(2);
    expect(rejected.stderr).toMatch(/rejected.*export the token syncmirror simulate printed/);
    expect(rejected.stderr).not.toContain("create a new platform access token");
    const nobody = await run(["init", "--simulator", "http://127.0.0.1:1", "--config", "x.yaml"], env, dir);
    expect(nobody.code).toBe(2);
    expect(nobody.stderr).toMatch(
      /--simulator http:\/\/127\.0\.0\.1:1: nothing answers.*syncmirror simulate/,
    );
    expect(nobody.stderr).not.toContain("api.base_url");
    expect(existsSync(join(dir, "x.yaml"))).toBe(false);
  });

  it("a path that cannot take a file exits 2 with one line naming it: below a file, a directory", async () => {
    const { dir, env } = await setUp();
    writeFileSync(join(dir, "afile"), "");
    mkdirSync(join(dir, "adir"));
    const cases: [string, RegExp][] = [
      [
        "afile/x.yaml",
        /^syncmirror: cannot write afile\/x\.yaml: .*: name a file in a directory this user can write with --config FILE\n$/,
      ],
      [
        "newdir/",
        /^syncmirror: newdir\/ is a directory: name the config file itself, e.g. --config newdir\/syncmirror\.yaml\n$/,
      ],
      [
        "adir",
        /^syncmirror: adir is a directory: name the config file itself, e.g. --config adir\/syncmirror\.yaml\n$/,
      ],
    ];
    for (const [config, message] of cases) {
      const r = await run(["init", "--config", config], env, dir);
      expect(r.code, config).toBe(2);
      expect(r.stderr).toMatch(message);
    }
    expect(existsSync(join(dir, "newdir"))).toBe(false);
  });

  it("a directory that cannot be created exits 2 at once naming it: under /proc, without write permission", async () => {
    const { dir, env } = await setUp();
    child = spawnCli(["init", "--config", "/proc/syncmirror-nowhere/x.yaml"], env, { cwd: dir });
    expect((await child.exited).code).toBe(2);
    expect(child.stderr()).toBe(
      "syncmirror: cannot write /proc/syncmirror-nowhere/x.yaml: cannot create directory /proc/syncmirror-nowhere (ENOENT: its filesystem does not allow creating it): name a file in a directory this user can write with --config FILE\n",
    );
    chmodSync(dir, 0o755);
    mkdirSync(join(dir, "locked"), { mode: 0o555 });
    chmodSync(join(dir, "locked"), 0o555);
    const asNobody =
      process.getuid?.() === 0 ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : [];
    child = spawnCli(["init", "--config", "locked/data/x.yaml"], env, { cwd: dir, wrap: asNobody });
    expect((await child.exited).code).toBe(2);
    expect(child.stderr()).toMatch(
      /^syncmirror: cannot write locked\/data\/x\.yaml: cannot create directory .*locked\/data \(EACCES: permission denied for this user\): name a file/,
    );
  });
});
