/**
 * A `database.path` that cannot be created or opened ends at once in exit 2 with one line naming
 * the path and the reason, for `sync` and `run`; `check` reports it as a problem. Before, a path
 * under /proc made a recursive mkdir spin forever, deaf to SIGTERM. SQLite only (`database.path`):
 * the postgres project leaves this file out (vitest.config.ts).
 */
import { spawn } from "node:child_process";
import {
  chmodSync,
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { buildOnce } from "../daemon/setup.js";

const CLI = join(import.meta.dirname, "..", "..", "..", "dist", "cli.js");
const TOKEN_ENV = "SYNCMIRROR_TEST_TOKEN";
let dir: string | undefined;

beforeAll(buildOnce);
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A config readable by every user, pointing at `dbPath` and at an API that is never reached. */
function configFor(dbPath: (dir: string) => string): { configPath: string; dbPath: string; dir: string } {
  dir = mkdtempSync(join(tmpdir(), "syncmirror-dbpath-"));
  chmodSync(dir, 0o755);
  const path = dbPath(dir);
  const configPath = join(dir, "syncmirror.yaml");
  writeFileSync(
    configPath,
    stringify({
      api: {
        base_url: "http://127.0.0.1:9/api/v1",
        token_env: TOKEN_ENV,
        max_attempts: 1,
        timeout_seconds: 1,
      },
      database: { path },
      http: { listen: "127.0.0.1:0" },
      mirrors: [{ name: "main", sync_config_id: "cfg-1" }],
    }),
  );
  chmodSync(configPath, 0o644);
  return { configPath, dbPath: path, dir };
}

/** The CLI as a child process, as an unprivileged user when the tests run as root. */
function cli(
  args: string[],
  options: { unprivileged?: boolean } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const asNobody = options.unprivileged && process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, [TOKEN_ENV]: "test-token-value", LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
      ...asNobody,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("a database path that cannot be created or opened", () => {
  it("under /proc (mkdir answers ENOENT forever): sync and run exit 2 naming the path and why", async () => {
    const { configPath } = configFor(() => "/proc/syncmirror-nowhere/mirror.db");
    for (const command of ["sync", "run"]) {
      const r = await cli([command, "--config", configPath]);
      expect(r.code, command).toBe(2);
      expect(r.stderr, command).toContain("/proc/syncmirror-nowhere/mirror.db");
      expect(r.stderr, command).toMatch(/cannot create directory \/proc\/syncmirror-nowhere/);
      expect(r.stderr, command).not.toMatch(/\n\s+at /);
    }
  });

  it("below a file: exit 2 saying which part is not a directory; check reports it as a problem", async () => {
    const { configPath, dir: root } = configFor((d) => join(d, "plain-file", "data", "mirror.db"));
    writeFileSync(join(root, "plain-file"), "");
    const r = await cli(["sync", "--config", configPath]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${join(root, "plain-file")} is not a directory`);
    const checked = await cli(["check", "--config", configPath]);
    expect(checked.code).toBe(1);
    expect(checked.stdout).toMatch(/PROBLEM database .*plain-file.* is not a directory/);
    expect(checked.stdout).not.toContain("no problems found");
  });

  it("in a directory this user may not write: exit 2 for sync and run, a problem for check", async () => {
    const { configPath, dir: root } = configFor((d) => join(d, "locked", "data", "mirror.db"));
    mkdirSync(join(root, "locked"), { mode: 0o555 });
    chmodSync(join(root, "locked"), 0o555);
    for (const command of ["sync", "run"]) {
      const r = await cli([command, "--config", configPath], { unprivileged: true });
      expect(r.code, command).toBe(2);
      expect(r.stderr, command).toMatch(/cannot create directory .*locked\/data \(EACCES: permission denied/);
      expect(r.stderr, command).not.toMatch(/\n\s+at /);
    }
    const checked = await cli(["check", "--config", configPath], { unprivileged: true });
    expect(checked.stdout).toMatch(/PROBLEM database .*locked.*EACCES/);
  });

  it("a directory where the database file should be: exit 2", async () => {
    const { configPath, dbPath } = configFor((d) => join(d, "mirror.db"));
    mkdirSync(dbPath);
    const r = await cli(["sync", "--config", configPath]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${dbPath} is a directory, not a file`);
  });
  it("a SQLite file whose pages are damaged: exit 1, one line saying it is corrupt and to restore a backup, not to fix permissions", async () => {
    const { configPath, dbPath } = configFor((d) => join(d, "mirror.db"));
    const db = new Database(dbPath);
    for (let i = 0; i < 200; i++) db.exec(`CREATE TABLE t${i} (id INTEGER PRIMARY KEY, note TEXT)`);
    db.close();
    // Page 1 (the header and the schema's root) stays whole; every page after it is overwritten.
    const damaged = statSync(dbPath).size - 4096;
    const fd = openSync(dbPath, "r+");
    writeSync(fd, Buffer.alloc(damaged, 0x5a), 0, damaged, 4096);
    closeSync(fd);
    const r = await cli(["sync", "--json", "--config", configPath]);
    expect(r.code, r.stderr).toBe(1);
    expect(JSON.parse(r.stdout).error.code).toBe("DB_ERROR");
    const lines = r.stderr
      .trimEnd()
      .split("\n")
      .filter((l) => !l.startsWith("{"));
    expect(lines).toEqual([
      expect.stringMatching(
        /^syncmirror: the database file .*mirror\.db is corrupt \(.*\): restore it from a backup/,
      ),
    ]);
    expect(r.stderr).not.toMatch(/writable by this user|disk is not full/);
  });
});
