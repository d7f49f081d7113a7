/**
 * Security: the token never appears in logs, stdout, the database, /status or /metrics, nor does
 * the database URL's password on PostgreSQL; the HTTP endpoints serve no document content; on
 * SQLite the database and its -wal / -shm / lock files are 0600 even under umask 000. The daemon
 * (`run`) and the one-shot commands run as real processes with debug logging, so every log line
 * they can write is scanned.
 */
import type { ChildProcess } from "node:child_process";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { parse, stringify } from "yaml";
import { type CliProcess, httpGet, spawnCli, waitForPort } from "../../helpers/daemon.js";
import { onPostgres } from "../../helpers/dialect.js";
import { createHarness, DATABASE_URL_ENV, type Harness, TOKEN_ENV } from "../../helpers/mirror-harness.js";
import { type ProxyAnswer, proxiedHarness } from "../../helpers/rewriting-proxy.js";

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

/** A password the server ignores (trust auth) but the URL carries, as a real one would. */
const DB_PASSWORD = "pg-pw-7c1e9a0b44";

/** On PostgreSQL, gives the harness's database URL a password, as a real one would carry. */
function withDatabasePassword(harness: Harness): void {
  if (harness.dialect === "sqlite") return;
  const url = new URL(harness.env[DATABASE_URL_ENV] as string);
  url.password = DB_PASSWORD;
  harness.env[DATABASE_URL_ENV] = url.toString();
}

/** Starts `run` under umask 000 and waits for its first pass to succeed. */
async function daemonAfterOnePass(
  harness: Harness,
  configPath: string,
): Promise<{ run: CliProcess; port: number }> {
  const run = start(["run"], configPath, harness.env);
  daemon = run.child;
  const port = await waitForPort(run);
  await vi.waitFor(
    async () =>
      expect(JSON.parse((await httpGet(port, "/status")).body).mirrors[0].last_outcome).toBe("succeeded"),
    { timeout: 30_000, interval: 50 },
  );
  return { run, port };
}

/** Every file beside the SQLite database, as bytes. */
function databaseFiles(dir: string): Map<string, Buffer> {
  return new Map(readdirSync(dir).map((f) => [f, readFileSync(join(dir, f))]));
}

/** Tables whose rows, as text, contain `secret` (PostgreSQL; on SQLite the files are scanned). */
function tablesHolding(harness: Harness, secret: string): string[] {
  const tables = harness
    .query<{ name: string }>("SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'")
    .map((t) => t.name);
  return tables.filter(
    (t) => harness.query(`SELECT 1 FROM ${t} x WHERE strpos(x::text, ?) > 0 LIMIT 1`, secret).length > 0,
  );
}

describe("secrets", () => {
  it("the daemon and the commands never show the token or the database password, and serve no content", async () => {
    h = await createHarness({ sim: { docs: 30 }, mirror: { incremental_cron: "* * * * * *" } });
    const harness = h;
    const secrets = [h.sim.token, DB_PASSWORD];
    withDatabasePassword(h);
    const { run, port } = await daemonAfterOnePass(h, h.configPath);
    const bodies = await Promise.all(
      ["/metrics", "/status", "/healthz", "/readyz", "/nope"].map((path) => httpGet(port, path)),
    );
    const filesWhileRunning = h.dialect === "sqlite" ? databaseFiles(h.dir) : new Map();
    run.child.kill("SIGTERM");
    expect((await run.exited).code).toBe(0);

    const titles = h.query<{ title: string }>("SELECT title FROM resources").map((r) => r.title);
    expect(titles.length).toBeGreaterThan(0);
    for (const { body } of bodies) {
      for (const secret of secrets) expect(body).not.toContain(secret);
      for (const t of titles) expect(body).not.toContain(t);
    }
    expect(bodies.map((b) => b.status)).toEqual([200, 200, 200, 200, 404]);

    const sync = start(["sync", "--full", "--json"], h.configPath, h.env);
    expect((await sync.exited).code).toBe(0);
    const status = start(["status", "--json"], h.configPath, h.env);
    expect((await status.exited).code).toBe(0);
    const check = start(["check"], h.configPath, h.env);
    await check.exited;
    if (h.dialect === "sqlite") {
      for (const files of [filesWhileRunning, databaseFiles(h.dir)]) {
        for (const [file, bytes] of files)
          expect(bytes.includes(h.sim.token), `${file} holds the token`).toBe(false);
      }
    } else expect(tablesHolding(harness, h.sim.token)).toEqual([]);
    for (const out of [run, sync, status, check].map((p) => ({ stdout: p.stdout(), stderr: p.stderr() }))) {
      expect(out.stderr.length + out.stdout.length).toBeGreaterThan(0);
      for (const secret of secrets) {
        expect(out.stdout).not.toContain(secret);
        expect(out.stderr).not.toContain(secret);
      }
    }
    expect(run.stderr()).toContain('"level":20');
  });

  it("never shows the token when the upstream echoes it in 429, 5xx, 409, 401 and unreadable answers, nor after a reset trigger", async () => {
    const proxied = await proxiedHarness({ sim: { docs: 10 }, maxAttempts: 2 });
    h = proxied.h;
    const token = h.sim.token;
    const seen = new Map<string, number>();
    /** The request's route without ids, and how many times that route was asked. */
    const nth = (method: string, path: string) => {
      const route = `${method} ${path.split("?")[0]?.replace(/\/sync-task\/[^/]+/, "/sync-task/{id}")}`;
      const n = (seen.get(route) ?? 0) + 1;
      seen.set(route, n);
      return `${route} #${n}`;
    };
    const echo = (status: number, detail: unknown, headers?: Record<string, string>): ProxyAnswer => ({
      status,
      body: JSON.stringify({ detail }),
      ...(headers ? { headers } : {}),
    });
    proxied.proxy.intercept = ({ method, path, authorization }) => {
      const failed = echo(500, { message: `upstream failed for ${authorization}` });
      // Pass 1: a 429 then a reset on the trigger, and a run list failing on every attempt. Pass 2:
      // an unreadable export page and a 401. Pass 3 finishes that trigger; pass 4 meets a 409 and
      // pass 5 succeeds. Each fault's answer echoes the credentials.
      const faults: Record<string, ProxyAnswer | "reset"> = {
        "POST /sync-task #1": echo(429, `slow down, ${authorization}`, { "retry-after": "0" }),
        "POST /sync-task #2": "reset",
        "GET /sync-task #1": failed,
        "GET /sync-task #2": failed,
        "GET /sync-task/{id}/export #1": { status: 200, body: `<html>${authorization}</html>` },
        "GET /sync-task/{id}/export #2": echo(401, `token ${authorization.slice(7)} expired`),
        "POST /sync-task #4": echo(409, `cannot start: ${authorization}`),
      };
      const fault = faults[nth(method, path)];
      if (fault === "reset") throw new Error("reset");
      return fault;
    };
    const outputs: string[] = [];
    for (const args of [
      ["sync", "--json"],
      ["sync", "--json"],
      ["sync", "--full", "--json"],
      ["sync", "--full", "--json"],
      ["sync", "--full", "--json"],
      ["history", "--json"],
      ["problems", "--json"],
      ["status", "--json"],
    ]) {
      const r = await h.cli(args, { LOG_LEVEL: "trace" });
      outputs.push(`${args.join(" ")} -> ${r.code}\n${r.stdout}\n${r.stderr}`);
    }
    const said = outputs.join("\n");
    expect(said).not.toContain(token);
    for (const met of [
      '"status":"429"',
      "UND_ERR_SOCKET",
      "(last: 500: upstream failed for Bearer [redacted])",
      "not JSON",
      "rejected (401",
      "cannot start: Bearer [redacted]",
      '"outcome": "succeeded"',
    ])
      expect(said, "every fault was met, and its echo shown scrubbed").toContain(met);
    if (h.dialect === "sqlite")
      for (const [file, bytes] of databaseFiles(h.dir)) expect(bytes.includes(token), file).toBe(false);
    else expect(tablesHolding(h, token)).toEqual([]);
  });

  it("never shows the token when an error body echoes it JSON-escaped (`\\/`, `\\uXXXX`), as many serializers write it", async () => {
    const token = "tok/9f2c+e1/Ab7Qx";
    const proxied = await proxiedHarness({ sim: { docs: 6, token }, maxAttempts: 2 });
    h = proxied.h;
    const escapedSlashes = (text: string) => JSON.stringify(text).replaceAll("/", "\\/");
    const unicodeEscaped = (text: string) =>
      `"${[...text].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")}"`;
    let posts = 0;
    proxied.proxy.intercept = ({ method, path, authorization }) => {
      if (method === "POST" && path === "/sync-task" && ++posts === 1)
        return { status: 409, body: `{"detail":${escapedSlashes(`cannot start for ${authorization}`)}}` };
      if (method === "GET" && path.startsWith("/sync-task?"))
        return { status: 503, body: `{"detail":{"message":${unicodeEscaped(`down for ${authorization}`)}}}` };
      return undefined;
    };
    const outputs: string[] = [];
    for (const args of [["sync", "--json"], ["sync", "--json"], ["history"], ["problems"]]) {
      const r = await h.cli(args, { LOG_LEVEL: "trace" });
      outputs.push(`${args.join(" ")} -> ${r.code}\n${r.stdout}\n${r.stderr}`);
    }
    const said = outputs.join("\n");
    for (const met of ["cannot start for Bearer [redacted]", "down for Bearer [redacted]"])
      expect(said, "every echo was met, and shown scrubbed").toContain(met);
    expect(said).not.toContain(token);
    if (h.dialect === "sqlite")
      for (const [file, bytes] of databaseFiles(h.dir)) expect(bytes.includes(token), file).toBe(false);
    else expect(tablesHolding(h, token)).toEqual([]);
  });

  it("never stores or shows the token when a source's error text echoes it; keeps 2000 characters of it and shows them without terminal escapes", async () => {
    h = await createHarness({ sim: { docs: 6 } });
    const token = h.sim.token;
    const escapes = "\u001b[2J\u001b[31mred\u001b]0;title\u0007";
    h.sim.setOutcome(
      {},
      { task: "FAILED", error: `auth failed for ${token} ${escapes} ${"x".repeat(100_000)}` },
    );
    const sync = await h.cli(["sync", "--json"], { LOG_LEVEL: "trace" });
    expect(sync.code).toBe(1);
    const shown = [sync];
    for (const args of [["history"], ["history", "--json"], ["problems"], ["problems", "--json"]])
      shown.push(await h.cli(args, { LOG_LEVEL: "trace" }));
    const said = shown.map((r) => `${r.stdout}\n${r.stderr}`).join("\n");
    expect(said).not.toContain(token);
    expect(said, "the text is shown, the token scrubbed").toContain("auth failed for [redacted]");
    for (const text of [shown[1]?.stdout, shown[3]?.stdout]) {
      expect(text).toContain("auth failed for [redacted]");
      expect(text, "no escape reaches the terminal").not.toContain("\u001b");
      expect(text).not.toContain("\u0007");
    }
    const reasons = JSON.parse(shown[4]?.stdout ?? "").problems.map((p: { reason: string }) => p.reason);
    expect(reasons.length).toBeGreaterThan(0);
    for (const reason of reasons)
      expect(reason).toMatch(/^FAILED: auth failed for \[redacted\] .{1900,2000}\.\.\.$/su);
    if (h.dialect === "sqlite")
      for (const [file, bytes] of databaseFiles(h.dir)) expect(bytes.includes(token), file).toBe(false);
    else expect(tablesHolding(h, token)).toEqual([]);
  });

  it("a rejected token is named by its variable, never by its value", async () => {
    h = await createHarness({ sim: { docs: 3 } });
    const wrong = "wrong-token-0123456789abcdef";
    const r = await h.cli(["sync"], { [TOKEN_ENV]: wrong, LOG_LEVEL: "debug" });
    expect(r.code).toBe(1);
    expect(`${r.stdout}${r.stderr}`).toContain(`$${TOKEN_ENV}`);
    expect(`${r.stdout}${r.stderr}`).not.toContain(wrong);
    if (h.dialect === "sqlite")
      for (const [file, bytes] of databaseFiles(h.dir)) expect(bytes.includes(wrong), file).toBe(false);
    else expect(tablesHolding(h, wrong)).toEqual([]);
  });
});

describe.skipIf(onPostgres)("SQLite only (file modes; PostgreSQL keeps its files): file modes", () => {
  it("keeps the database directory 0700 and the database, -wal, -shm and lock files 0600 under umask 000", async () => {
    h = await createHarness({ sim: { docs: 10 }, mirror: { incremental_cron: "* * * * * *" } });
    // In a directory the daemon creates.
    const dataDir = join(h.dir, "data");
    const config = parse(readFileSync(h.configPath, "utf8"));
    config.database.path = join(dataDir, "mirror.db");
    const configPath = join(h.dir, "daemon.yaml");
    writeFileSync(configPath, stringify(config));
    const { run } = await daemonAfterOnePass(h, configPath);
    const modes = readdirSync(dataDir).map((f) => [f, statSync(join(dataDir, f)).mode & 0o777] as const);
    run.child.kill("SIGTERM");
    expect((await run.exited).code).toBe(0);
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    expect(modes.map(([f]) => f)).toEqual(
      expect.arrayContaining(["mirror.db", "mirror.db-shm", "mirror.db-wal", "mirror.db.lock"]),
    );
    for (const [file, mode] of modes) expect(mode, `${file} mode`).toBe(0o600);
  });
});
