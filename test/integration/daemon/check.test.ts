/**
 * `syncmirror check` as a child process: the access matrix, each kind of problem it flags, and its
 * exit codes (0 clean, 1 problems, 2 invalid config or a database that refuses it). It never prints the token.
 */
import { randomUUID } from "node:crypto";
import { existsSync, statSync, writeFileSync } from "node:fs";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { queryPostgres, TEST_DIALECT } from "../../helpers/dialect.js";
import { createHarness, DATABASE_URL_ENV, type Harness, TOKEN_ENV } from "../../helpers/mirror-harness.js";
import { closeSync } from "../../helpers/pg-sync.js";
import { createTestDatabase } from "../../helpers/postgres.js";
import { proxiedHarness } from "../../helpers/rewriting-proxy.js";
import { buildOnce, editConfig } from "./setup.js";

let h: Harness | undefined;
beforeAll(buildOnce);
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function check(harness: Harness): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const result = await harness.cli(["check"]);
  for (const text of [result.stdout, result.stderr]) expect(text).not.toContain(harness.sim.token);
  return result;
}

function problems(stdout: string): string[] {
  return stdout.split("\n").filter((line) => line.includes("PROBLEM"));
}

function addSecondMirror(harness: Harness): void {
  editConfig(harness, (config) => {
    const mirrors = config.mirrors as Record<string, unknown>[];
    mirrors.push({ name: "second", sync_config_id: harness.sim.configs.create({}) });
  });
}

function setSyncConfigId(harness: Harness, id: string): void {
  editConfig(harness, (config) => {
    const [mirror] = config.mirrors as Record<string, unknown>[];
    if (mirror) mirror.sync_config_id = id;
  });
}

describe("syncmirror check", () => {
  it("prints the user x server access matrix and exits 0 when nothing is wrong", async () => {
    h = await createHarness();
    const { code, stdout } = await check(h);
    expect(code).toBe(0);
    // Each mirror's report starts on a line of its own after a blank one, not after an escape.
    expect(stdout).toContain(`\n\nmirror main -> sync config ${h.sim.syncConfigId}\n`);
    expect(stdout).not.toContain("\\x0a");
    const header = stdout.split("\n").find((line) => /^\s+user\s+project/.test(line));
    for (const server of h.sim.servers) expect(header).toContain(server.server_name);
    for (const user of h.sim.users) expect(stdout).toMatch(new RegExp(`${user}\\s+yes\\s+ok`));
    expect(problems(stdout)).toEqual([]);
    expect(stdout).toContain("no problems found");
    // check changes nothing upstream: no config written, no trigger (so no run created).
    expect(h.sim.requests.map((r) => r.method).filter((m) => m !== "GET")).toEqual([]);
  });

  it("exits 0 against a service without GET /projects (404) whose sync configs answer", async () => {
    const { h: proxied, proxy } = await proxiedHarness({ maxAttempts: 1 });
    h = proxied;
    proxy.intercept = ({ method, path }) =>
      method === "GET" && path.split("?")[0] === "/projects"
        ? { status: 404, body: JSON.stringify({ detail: "Not Found" }) }
        : undefined;
    const { code, stdout } = await check(h);
    expect(problems(stdout)).toEqual([]);
    expect(stdout).toContain("no problems found");
    for (const user of h.sim.users) expect(stdout).toMatch(new RegExp(`${user}\\s+yes\\s+ok`));
    expect(code).toBe(0);
  });

  it("flags a sync config that does not exist upstream, exit 1", async () => {
    h = await createHarness();
    const missing = randomUUID();
    setSyncConfigId(h, missing);
    const { code, stdout } = await check(h);
    expect(code).toBe(1);
    expect(problems(stdout)).toEqual([
      expect.stringMatching(new RegExp(`remote config missing.*${missing}`)),
    ]);
  });

  it("flags a server the config has paused (available: false), exit 1", async () => {
    h = await createHarness();
    const server = h.sim.servers[0];
    if (!server) throw new Error("no server");
    h.sim.configs.setServerAvailable(h.sim.syncConfigId, server.server_instance_id, false);
    const { code, stdout } = await check(h);
    expect(code).toBe(1);
    // Every user's cell says it; the problem is one: the server, with what to do about it.
    for (const user of h.sim.users)
      expect(stdout).toMatch(new RegExp(`${user}\\s+yes\\s+.*NO \\(not_syncable\\)`));
    expect(problems(stdout)).toEqual([
      expect.stringMatching(
        new RegExp(`server ${server.server_name} is not available.*resume it in the service, or remove it`),
      ),
    ]);
    expect(stdout).toContain("1 problem(s) found");
  });

  it("says on each problem line what to do about it", async () => {
    h = await createHarness();
    const [admin, signIn, leaves] = h.sim.users;
    const [first, second] = h.sim.servers;
    if (!admin || !signIn || !leaves || !first || !second) throw new Error("too few users or servers");
    setSyncConfigId(h, h.sim.configs.create({ userEmails: [admin, signIn, leaves] }));
    h.sim.people.setAuth(admin, first.server_instance_id, "needs_project_admin");
    h.sim.people.setAuth(signIn, first.server_instance_id, "not_authenticated");
    h.sim.people.setAuth(signIn, second.server_instance_id, "needs_tenant_admin");
    h.sim.people.leaveProject(leaves);
    const { code, stdout } = await check(h);
    expect(code).toBe(1);
    expect(problems(stdout).sort()).toEqual(
      [
        `${admin} cannot be synced on ${first.server_name}: needs_project_admin: a project admin must connect ${first.server_name} in the service`,
        `${signIn} cannot be synced on ${first.server_name}: not_authenticated: ${signIn} must sign in to ${first.server_name} in the service`,
        `${signIn} cannot be synced on ${second.server_name}: needs_tenant_admin: a tenant admin must allow ${second.server_name} in the service`,
        `${leaves} is not a project user: they lose access at the next full pass; add them back to the project, or remove them from the sync config`,
      ]
        .map((p) => `  PROBLEM ${p}`)
        .sort(),
    );
  });

  it("flags a user who is not authenticated on a server, exit 1", async () => {
    h = await createHarness();
    const [user] = h.sim.users;
    const server = h.sim.servers[0];
    if (!user || !server) throw new Error("no user or server");
    h.sim.people.setAuth(user, server.server_instance_id, "not_authenticated");
    const { code, stdout } = await check(h);
    expect(code).toBe(1);
    expect(stdout).toMatch(new RegExp(`${user}\\s+yes\\s+.*NO \\(not_authenticated\\)`));
    expect(problems(stdout)).toEqual([
      expect.stringContaining(`${user} cannot be synced on ${server.server_name}: not_authenticated`),
    ]);
  });

  it("flags a listed user who is no longer in the project, exit 1", async () => {
    h = await createHarness();
    const [stays, leaves] = h.sim.users;
    if (!stays || !leaves) throw new Error("too few users");
    setSyncConfigId(h, h.sim.configs.create({ userEmails: [stays, leaves] }));
    h.sim.people.leaveProject(leaves);
    const { code, stdout } = await check(h);
    expect(code).toBe(1);
    expect(stdout).toMatch(new RegExp(`${leaves}\\s+NO`));
    expect(problems(stdout)).toContainEqual(expect.stringContaining(`${leaves} is not a project user`));
    expect(problems(stdout).join("\n")).not.toContain(stays);
  });

  it("flags a mirror whose last pass the service refused (Background Sync off), saying what to do, until a pass succeeds", async () => {
    h = await createHarness();
    // The service says the feature is off only by refusing a trigger; check itself never sends one.
    h.sim.setPremium(false);
    expect((await h.sync()).outcome).toBe("refused");
    h.sim.requests.length = 0;
    const refused = await check(h);
    expect(refused.code).toBe(1);
    expect(problems(refused.stdout)).toEqual([
      expect.stringMatching(
        /last pass \(at .+\) was refused: Background Sync is turned off.*turn on Background Sync under Administration > Premium Features/,
      ),
    ]);
    expect(h.sim.requests.map((r) => r.method).filter((m) => m !== "GET")).toEqual([]);

    h.sim.setPremium(true);
    expect((await h.sync()).outcome).toBe("succeeded");
    const cleared = await check(h);
    expect(cleared.code).toBe(0);
    expect(problems(cleared.stdout)).toEqual([]);
  });

  it("a rejected token is one problem line saying what to do, not one per mirror, exit 1", async () => {
    h = await createHarness();
    addSecondMirror(h);
    const { code, stdout } = await h.cli(["check"], { [TOKEN_ENV]: "not-the-token" });
    expect(code).toBe(1);
    expect(problems(stdout)).toEqual([expect.stringMatching(/token .* was rejected.*create a new/)]);
    expect(stdout).not.toContain("cannot reach");
    expect(stdout).toContain("1 problem(s) found");
  });

  it("an API nobody answers at is one problem line naming api.base_url, not one per mirror, exit 1", async () => {
    h = await createHarness({ maxAttempts: 1 });
    addSecondMirror(h);
    editConfig(h, (config) => {
      (config.api as Record<string, unknown>).base_url = "http://127.0.0.1:1/api/v1";
    });
    const { code, stdout } = await check(h);
    expect(code).toBe(1);
    expect(problems(stdout)).toEqual([expect.stringMatching(/cannot reach the API.*api\.base_url/)]);
    expect(stdout).toContain("1 problem(s) found");
  });

  it("names an answer it cannot read as what it is, not as an API it cannot reach, exit 1", async () => {
    h = await createHarness();
    h.sim.faults.inject("GET /sync-configs/{id}/access", {
      kind: "missing-field",
      field: "items.*.servers",
      times: Number.POSITIVE_INFINITY,
    });
    const { code, stdout } = await check(h);
    expect(code).toBe(1);
    expect(problems(stdout)).toEqual([
      expect.stringMatching(
        /^ {2}PROBLEM GET \/sync-configs\/\{id\}\/access: the response does not have the documented shape/,
      ),
    ]);
    expect(stdout).not.toContain("cannot reach");
  });

  it("exits 2 on an invalid config, naming the key and never the token written in it", async () => {
    h = await createHarness();
    const token = h.sim.token;
    editConfig(h, (config) => {
      (config.api as Record<string, unknown>).token = token;
    });
    const { code, stdout, stderr } = await check(h);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toContain(h.configPath);
    expect(stderr).toContain("api.token");

    editConfig(h, (config) => {
      const api = config.api as Record<string, unknown>;
      delete api.token;
      delete api.base_url;
    });
    const missing = await check(h);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("base_url");
  });

  it.skipIf(TEST_DIALECT !== "postgres")(
    "exits 2 when the database refuses the configuration (no such database), as sync does, after its report",
    async () => {
      h = await createHarness();
      const url = new URL(h.databaseUrl ?? "");
      url.pathname = `/syncmirror_missing_${randomUUID().replaceAll("-", "")}`;
      const { code, stdout } = await h.cli(["check"], { [DATABASE_URL_ENV]: url.toString() });
      expect(code).toBe(2);
      expect(problems(stdout)).toContainEqual(
        expect.stringMatching(/does not exist.*create it \(createdb\)/),
      );
      expect(stdout).toContain(`-> sync config ${h.sim.syncConfigId}`);
    },
  );

  it("prints the service's names with their control characters as \\xHH, never as terminal escapes", async () => {
    h = await createHarness();
    const name = "wiki\u001b[2J\u001b]0;owned\u0007\nPROBLEM none";
    setSyncConfigId(h, h.sim.configs.create({ name }));
    const { code, stdout } = await check(h);
    expect(code).toBe(0);
    expect(stdout).toContain("remote name: wiki\\x1b[2J\\x1b]0;owned\\x07\\x0aPROBLEM none; servers:");
    expect(stdout.replaceAll("\n", "")).not.toMatch(/\p{Cc}/u);
  });
});

/**
 * The read-only commands before the first sync: each says in one line that the database holds no
 * mirror yet, exits as it would on an empty mirror, and leaves the database as it found it (no
 * SQLite file or lock file created, no table created in an empty file or PostgreSQL database).
 */
describe("check, status and plan on a database that holds no mirror yet", () => {
  const readOnly = async (harness: Harness, env: Record<string, string> = {}) => {
    const check = await harness.cli(["check"], env);
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toMatch(
      /^database .*: (can be opened|reachable), no mirror in it yet: the first `syncmirror sync` or `run` creates it$/m,
    );
    expect(problems(check.stdout)).toEqual([]);
    for (const command of [["status"], ["status", "--json"], ["plan"]]) {
      const r = await harness.cli(command, env);
      expect(r.code, `${command.join(" ")}: ${r.stderr}`).toBe(0);
      expect(r.stderr, command.join(" ")).toMatch(
        /^no mirror (database at .+|in the PostgreSQL database in \$\w+) yet: nothing has synced; `syncmirror sync` creates it\n$/,
      );
    }
  };

  it.runIf(TEST_DIALECT === "sqlite")(
    "SQLite: creates no file where none is, and no table in an empty file",
    async () => {
      h = await createHarness();
      await readOnly(h);
      expect(existsSync(h.dbPath)).toBe(false);
      expect(existsSync(`${h.dbPath}.lock`)).toBe(false);

      writeFileSync(h.dbPath, "");
      await readOnly(h);
      expect(statSync(h.dbPath).size, "the empty file stays empty").toBe(0);
      expect(existsSync(`${h.dbPath}.lock`)).toBe(false);
    },
  );

  it.runIf(TEST_DIALECT === "postgres")("PostgreSQL: creates no table in an empty database", async () => {
    h = await createHarness();
    const empty = await createTestDatabase({ empty: true });
    try {
      await readOnly(h, { [DATABASE_URL_ENV]: empty.url });
      const tables = queryPostgres<{ name: string }>(
        empty.url,
        `SELECT n.nspname || '.' || c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') AND n.nspname NOT LIKE 'pg_temp%'
           AND n.nspname NOT LIKE 'pg_toast_temp%'`,
        [],
      );
      expect(tables).toEqual([]);
    } finally {
      closeSync(empty.url);
      await empty.release();
    }
  });
});
