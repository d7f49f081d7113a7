/**
 * Security: the token never appears in logs, stdout, the database files, /status or /metrics; the
 * database and its -wal / -shm / lock files are 0600 even under umask 000; the HTTP endpoints
 * serve no document content. The daemon (`run`) and the one-shot commands run as real processes
 * with debug logging, so every log line they can write is scanned.
 */
import type { ChildProcess } from "node:child_process";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it, vi } from "vitest";
import { parse, stringify } from "yaml";
import { httpGet, spawnCli, waitForPort } from "../../helpers/daemon.js";
import { createHarness, type Harness, TOKEN_ENV } from "../../helpers/mirror-harness.js";

let h: Harness | undefined;
let daemon: ChildProcess | undefined;
afterEach(async () => {
  if (daemon && daemon.exitCode === null) daemon.kill("SIGKILL");
  daemon = undefined;
  await h?.close();
  h = undefined;
});

/** The real CLI under `umask 000`, with debug logs: every line it can write is scanned. */
const start = (args: string[], configPath: string, env: Record<string, string | undefined>) =>
  spawnCli([...args, "--config", configPath], { ...env, LOG_LEVEL: "debug" }, { prelude: "umask 000" });

/** Every file beside the database, as bytes. */
function databaseFiles(dir: string): Map<string, Buffer> {
  return new Map(readdirSync(dir).map((f) => [f, readFileSync(join(dir, f))]));
}

describe("secrets and file modes", () => {
  it("the daemon and the commands never show the token, keep files 0600, and serve no content", async () => {
    h = await createHarness({ sim: { docs: 30 }, mirror: { incremental_cron: "* * * * * *" } });
    const token = h.sim.token;
    const dataDir = join(h.dir, "data");
    const config = parse(readFileSync(h.configPath, "utf8"));
    config.database.path = join(dataDir, "mirror.db");
    const configPath = join(h.dir, "daemon.yaml");
    writeFileSync(configPath, stringify(config));

    const run = start(["run"], configPath, h.env);
    daemon = run.child;
    const port = await waitForPort(run);
    const get = (path: string) => httpGet(port, path);
    await vi.waitFor(
      async () => expect(JSON.parse((await get("/status")).body).mirrors[0].last_outcome).toBe("succeeded"),
      { timeout: 30_000, interval: 50 },
    );

    const bodies = await Promise.all(["/metrics", "/status", "/healthz", "/readyz", "/nope"].map(get));
    const modes = readdirSync(dataDir).map((f) => [f, statSync(join(dataDir, f)).mode & 0o777]);
    const filesWhileRunning = databaseFiles(dataDir);
    run.child.kill("SIGTERM");
    expect((await run.exited).code).toBe(0);

    const db = new Database(join(dataDir, "mirror.db"), { readonly: true });
    const titles = (db.prepare("SELECT title FROM resources").all() as { title: string }[]).map(
      (r) => r.title,
    );
    db.close();
    expect(titles.length).toBeGreaterThan(0);
    for (const { body } of bodies) {
      expect(body).not.toContain(token);
      for (const t of titles) expect(body).not.toContain(t);
    }
    expect(bodies.map((b) => b.status)).toEqual([200, 200, 200, 200, 404]);
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    expect(modes.map(([f]) => f)).toEqual(
      expect.arrayContaining(["mirror.db", "mirror.db-shm", "mirror.db-wal", "mirror.db.lock"]),
    );
    for (const [file, mode] of modes) expect(mode, `${file} mode`).toBe(0o600);

    const sync = start(["sync", "--full", "--json"], configPath, h.env);
    expect((await sync.exited).code).toBe(0);
    const status = start(["status", "--json"], configPath, h.env);
    expect((await status.exited).code).toBe(0);
    const check = start(["check"], configPath, h.env);
    await check.exited;
    for (const files of [filesWhileRunning, databaseFiles(dataDir)]) {
      for (const [file, bytes] of files) expect(bytes.includes(token), `${file} holds the token`).toBe(false);
    }
    for (const out of [run, sync, status, check].map((p) => ({ stdout: p.stdout(), stderr: p.stderr() }))) {
      expect(out.stderr.length + out.stdout.length).toBeGreaterThan(0);
      expect(out.stdout).not.toContain(token);
      expect(out.stderr).not.toContain(token);
    }
    expect(run.stderr()).toContain('"level":20');
  });

  it("a rejected token is named by its variable, never by its value", async () => {
    h = await createHarness({ sim: { docs: 3 } });
    const wrong = "wrong-token-0123456789abcdef";
    const r = await h.cli(["sync"], { [TOKEN_ENV]: wrong, LOG_LEVEL: "debug" });
    expect(r.code).toBe(1);
    expect(`${r.stdout}${r.stderr}`).toContain(`$${TOKEN_ENV}`);
    expect(`${r.stdout}${r.stderr}`).not.toContain(wrong);
    for (const [file, bytes] of databaseFiles(h.dir)) expect(bytes.includes(wrong), file).toBe(false);
  });
});
