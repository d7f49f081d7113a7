/**
 * What a first-time user met on main f653713 (issue 25, item 5), each through the real CLI: one
 * line that says what to do and the right exit code, never a stack trace. LOG_LEVEL, a closed
 * stdout, a cron field out of range, a listen port written as a number, an unreachable PostgreSQL
 * for a one-shot command, `status` after a rejected token, and the log line of a wrong base URL.
 */
import { mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { freePort, parseLogLines, spawnCli, startDaemon } from "../../helpers/daemon.js";
import { createHarness, type Harness, TOKEN_ENV } from "../../helpers/mirror-harness.js";
import { buildOnce, editConfig } from "./setup.js";

let h: Harness | undefined;
beforeAll(buildOnce);
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const STACK = /\n\s+at |node:internal|Error: write/;

async function harness(options: Parameters<typeof createHarness>[0] = {}): Promise<Harness> {
  h = await createHarness(options);
  return h;
}

describe("first-run problems, through the CLI", () => {
  it("LOG_LEVEL that is no level: exit 2 naming the valid levels, for sync and status alike", async () => {
    const h = await harness();
    for (const command of ["sync", "status"]) {
      const r = await h.cli([command], { LOG_LEVEL: "warning" });
      expect(r.code, command).toBe(2);
      expect(r.stderr).toBe(
        'syncmirror: LOG_LEVEL="warning" is not a log level: set it to one of trace, debug, info, warn, error, fatal, silent (default info)\n',
      );
    }
  });

  it("a reader closing stdout early: changes and demo stop quietly with 0, demo leaving no directory", async () => {
    const h = await harness({ sim: { docs: 60 } });
    expect((await h.sync()).outcome).toBe("succeeded");
    const changes = spawnCli(["changes", "--after", "0", "--limit", "1000", "--config", h.configPath], h.env);
    changes.child.stdout?.once("data", () => changes.child.stdout?.destroy());
    expect(await changes.exited).toEqual({ code: 0, signal: null });
    expect(changes.stderr()).not.toMatch(STACK);

    const tmp = join(h.dir, "tmp");
    mkdirSync(tmp);
    const demo = spawnCli(["demo"], { ...h.env, TMPDIR: tmp });
    demo.child.stdout?.once("data", () => demo.child.stdout?.destroy());
    expect(await demo.exited).toEqual({ code: 0, signal: null });
    expect(demo.stderr()).toBe("");
    expect(readdirSync(tmp), "demo removed its temporary directory").toEqual([]);
  });

  it("a cron field out of range: check names the field and its range, exit 2", async () => {
    const h = await harness();
    editConfig(h, (config) => {
      config.defaults = { ...(config.defaults as object), full_cron: "0 25 * * *" };
    });
    const r = await h.cli(["check"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      'defaults.full_cron: the hour field is "25", out of range: hours go from 0 to 23',
    );
  });

  it("listen written as a bare port: the daemon listens on every interface at that port", async () => {
    const h = await harness();
    const port = await freePort();
    editConfig(h, (config) => {
      config.http = { listen: port };
    });
    const d = await startDaemon(h);
    try {
      expect(d.port).toBe(port);
      expect(d.logs().find((l) => String(l.msg).startsWith("http listening"))).toMatchObject({
        host: "0.0.0.0",
        port,
      });
      expect((await d.get("/healthz")).status).toBe(200);
    } finally {
      await d.stop();
    }
  });

  it("run with the API token or the database URL unset: exit 2 naming the variable, nothing listens first", async () => {
    const h = await harness();
    const cases: [Record<string, string | undefined>, string][] = [
      [{ [TOKEN_ENV]: undefined }, `api.token_env: environment variable ${TOKEN_ENV} is not set`],
      [
        { FIRST_RUN_DATABASE_URL: undefined },
        "database.url_env: environment variable FIRST_RUN_DATABASE_URL is not set",
      ],
    ];
    for (const [unset, message] of cases) {
      if ("FIRST_RUN_DATABASE_URL" in unset)
        editConfig(h, (config) => {
          config.database = { url_env: "FIRST_RUN_DATABASE_URL" };
        });
      const d = spawnCli(["run", "--config", h.configPath], { ...h.env, LOG_LEVEL: "info", ...unset });
      expect((await d.exited).code, message).toBe(2);
      expect(d.stderr()).toContain(message);
      expect(d.stderr(), "logged before the refusal").not.toContain("http listening");
    }
  });

  it("sync with PostgreSQL unreachable: says what to do now, not that it keeps retrying", async () => {
    const h = await harness();
    const port = await freePort();
    editConfig(h, (config) => {
      config.database = { url_env: "FIRST_RUN_DATABASE_URL" };
    });
    const r = await h.cli(["sync"], { FIRST_RUN_DATABASE_URL: `postgres://nobody@127.0.0.1:${port}/x` });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^syncmirror: cannot reach the PostgreSQL database in \$FIRST_RUN_DATABASE_URL \(.*ECONNREFUSED.*\): check that the server is up and reachable from here; nothing was changed: run the command again once the database answers\n$/,
    );
    expect(r.stderr).not.toContain("keeps retrying");
  });

  it("status after a rejected token says what happened and what the next pass does", async () => {
    const h = await harness();
    const rejected = await h.cli(["sync"], { [TOKEN_ENV]: "not-the-token" });
    expect(rejected.code).toBe(1);
    const r = await h.cli(["status"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      `last outcome:             failed (the token in $${TOKEN_ENV} was rejected (401 on POST /sync-task)`,
    );
    expect(r.stdout).toContain(
      "in flight:                full trigger not started: the service has not accepted its POST (see last outcome); the next pass adopts any runs that POST created, else sends it",
    );
    expect(r.stdout).not.toContain("POST pending");
  });

  it("a base_url without /api/v1: the failure's log line blames the base URL in both err and msg", async () => {
    const h = await harness({ maxAttempts: 1 });
    editConfig(h, (config) => {
      (config.api as Record<string, unknown>).base_url = new URL(h.sim.baseUrl).origin;
    });
    const r = await h.cli(["sync"]);
    expect(r.code).toBe(1);
    const line = parseLogLines(r.stderr).find((l) => l.code === "API_NOT_FOUND");
    expect(line?.msg).toMatch(/^api\.base_url answers 404 on every route/);
    expect(line?.err).toMatch(/answered 404, and so does GET \/projects: api\.base_url is wrong/);
    expect(JSON.stringify(line)).not.toContain("sync_config_id");
  });
});
