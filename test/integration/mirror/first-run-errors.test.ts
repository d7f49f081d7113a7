/**
 * Errors a first-time user meets, each one line that says what to do next (never a stack):
 * a port already in use (run's http.listen, simulate's --port), a base URL without its /api/v1 prefix, a closed port. And `status`
 * before anything has synced, which reports and creates nothing; a database.path naming someone
 * else's file, refused by every command (check too) and left as it was.
 */
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { spawnCli } from "../../helpers/daemon.js";
import { TEST_DIALECT } from "../../helpers/dialect.js";
import { createHarness, type Harness, TOKEN_ENV } from "../../helpers/mirror-harness.js";
import { buildOnce, editConfig } from "../daemon/setup.js";

let h: Harness | undefined;
let blocker: Server | undefined;
beforeAll(buildOnce);
afterEach(async () => {
  await h?.close();
  await new Promise((resolve) => (blocker ? blocker.close(resolve) : resolve(undefined)));
  h = undefined;
  blocker = undefined;
});

async function listenAnywhere(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as { port: number }).port };
}

describe("first-run errors", () => {
  it("run on a port already in use: exit 2 naming http.listen and what to do", async () => {
    h = await createHarness();
    const taken = await listenAnywhere();
    blocker = taken.server;
    editConfig(h, (config) => {
      config.http = { listen: `127.0.0.1:${taken.port}` };
    });
    // At the default log level (the harness's is warn), so a stray info line would show.
    const r = await h.cli(["run"], { LOG_LEVEL: "info" });
    expect(r.code).toBe(2);
    // The one line, and no log line saying a daemon stopped that never started.
    expect(r.stderr).toBe(
      `syncmirror: cannot listen on 127.0.0.1:${taken.port} (http.listen): the port is already in use: stop the other process or pick another port\n`,
    );
  });

  it("run with the token variable unset: exit 2, only the line naming the variable to export", async () => {
    h = await createHarness();
    const r = await h.cli(["run"], { [TOKEN_ENV]: "", LOG_LEVEL: "info" });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `syncmirror: ${h.configPath}: invalid config: api.token_env: environment variable ${TOKEN_ENV} is set but empty: export the platform access token in it\n`,
    );
  });

  it("a token exported with the final newline of its secret file: sync succeeds (the newline is no part of it)", async () => {
    h = await createHarness({ sim: { docs: 3 } });
    const r = await h.cli(["sync"], { [TOKEN_ENV]: `${h.env[TOKEN_ENV]}\n` });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/InvalidArgumentError|\n\s+at /);
  });

  it("a token with a line break inside: exit 2 for sync and run, the one line naming the variable, never the value", async () => {
    h = await createHarness();
    const broken = `${h.env[TOKEN_ENV]}\nsecond-line-4f2a9c`;
    for (const command of ["sync", "run"]) {
      const r = await h.cli([command], { [TOKEN_ENV]: broken, LOG_LEVEL: "info" });
      expect(r.code, `${command}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toBe(
        `syncmirror: ${h.configPath}: invalid config: api.token_env: environment variable ${TOKEN_ENV} holds a line break or another control character inside the token, which no HTTP header can carry: export the token alone in it\n`,
      );
      expect(`${r.stdout}${r.stderr}`).not.toContain("second-line-4f2a9c");
    }
  });

  it("simulate on a port already in use: exit 2 naming --port and what to do", async () => {
    const taken = await listenAnywhere();
    blocker = taken.server;
    const p = spawnCli(["simulate", "--port", String(taken.port)], { ...process.env, LOG_LEVEL: "warn" });
    expect((await p.exited).code).toBe(2);
    expect(p.stderr()).toBe(
      `syncmirror: cannot listen on 127.0.0.1:${taken.port} (--port): the port is already in use: stop the other process or pick another port\n`,
    );
  });

  it("a base_url without /api/v1: check and sync blame the base URL, not sync_config_id", async () => {
    h = await createHarness({ maxAttempts: 1 });
    const origin = new URL(h.sim.baseUrl).origin;
    editConfig(h, (config) => {
      (config.api as Record<string, unknown>).base_url = origin;
    });
    const checked = await h.cli(["check"]);
    expect(checked.code).toBe(1);
    expect(checked.stdout).toMatch(/PROBLEM api\.base_url answers 404 on every route.*\/api\/v1/);
    expect(checked.stdout).not.toContain("sync_config_id");
    const synced = await h.cli(["sync", "--json"]);
    expect(synced.code).toBe(1);
    const summary = JSON.parse(synced.stdout).mirrors[0];
    expect(summary).toMatchObject({
      outcome: "failed",
      message: expect.stringMatching(/api\.base_url answers 404/),
    });
    expect(summary.message).not.toContain("sync_config_id");
  });

  it("a closed port: the message points at api.base_url, not at max_attempts", async () => {
    h = await createHarness({ maxAttempts: 1 });
    const closed = await listenAnywhere();
    await new Promise((resolve) => closed.server.close(resolve));
    editConfig(h, (config) => {
      (config.api as Record<string, unknown>).base_url = `http://127.0.0.1:${closed.port}/api/v1`;
    });
    const r = await h.cli(["sync", "--json"]);
    expect(r.code).toBe(1);
    const { message } = JSON.parse(r.stdout).mirrors[0];
    expect(message).toMatch(
      /ECONNREFUSED.*nothing answers at http:\/\/127\.0\.0\.1:\d+: check api\.base_url/,
    );
    expect(message).not.toContain("max_attempts");
  });

  it.skipIf(TEST_DIALECT === "postgres")(
    "status before the first sync: every mirror never synced, exit 0, and no database file created",
    async () => {
      h = await createHarness();
      const r = await h.cli(["status", "--json"]);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).mirrors[0]).toMatchObject({
        last_full_success_at: null,
        live_resources: 0,
      });
      expect(r.stderr).toContain(`no mirror database at ${h.dbPath} yet`);
      expect(existsSync(h.dbPath)).toBe(false);
    },
  );

  it.skipIf(TEST_DIALECT === "postgres")(
    "database.path naming a file that is no SQLite database: status, history, sync, run and check exit 2 saying so, the file untouched",
    async () => {
      h = await createHarness();
      const { dbPath } = h;
      const text = "notes kept next to the mirror\n".repeat(40);
      writeFileSync(dbPath, text);
      chmodSync(dbPath, 0o644);
      // Someone else's file: never made owner-only, no lock file created beside it.
      const expectUntouched = (after: string) => {
        expect(readFileSync(dbPath, "utf8"), after).toBe(text);
        expect(statSync(dbPath).mode & 0o777, after).toBe(0o644);
        expect(existsSync(`${dbPath}.lock`), after).toBe(false);
      };
      const refusal = `database.path: ${dbPath} is not a SQLite database (file is not a database): point database.path at the mirror's database, or move the file away so a new one is created`;
      for (const command of [["status"], ["history"], ["sync"], ["run"]]) {
        const r = await h.cli(command);
        expect(r.code, command.join(" ")).toBe(2);
        expect(r.stderr).toBe(`syncmirror: ${refusal}\n`);
        expectUntouched(command.join(" "));
      }
      expect(h.sim.requests).toEqual([]);
      // check goes on to the API (one report of everything), then exits 2 as the others do.
      const checked = await h.cli(["check"]);
      expect(checked.code).toBe(2);
      expect(checked.stdout).toContain(`PROBLEM ${refusal}\n`);
      expectUntouched("check");
    },
  );
});
