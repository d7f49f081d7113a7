/**
 * The real CLI against PostgreSQL problems an operator meets (docs/scaling-out.md, issue 9 "Bad input
 * and faults"): a missing database exits 2 naming the variable, never the URL; a server that does
 * not answer leaves the daemon alive, not ready, retrying; once it answers, the daemon gets ready.
 * A one-shot `--json` command that cannot reach the server still prints its one JSON document
 * (exit 1); one whose database does not exist prints nothing on stdout (exit 2, like bad usage).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { HELP } from "../../../src/commands/help.js";
import { type DaemonProcess, startDaemon, until } from "../../helpers/daemon.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { postgresForTests } from "../../helpers/postgres.js";
import { buildOnce, NEVER } from "../daemon/setup.js";

const available = await postgresForTests();
const URL_ENV = "SYNCMIRROR_PG_URL_UNDER_TEST";

let h: Harness | undefined;
let daemon: DaemonProcess | undefined;
beforeAll(buildOnce);
afterEach(async () => {
  await daemon?.stop("SIGKILL");
  daemon = undefined;
  await h?.close();
  h = undefined;
});

/** Points the harness's config at the URL held by URL_ENV. */
function useUrl(harness: Harness, url: string): void {
  const config = parse(readFileSync(harness.configPath, "utf8")) as Record<string, Record<string, unknown>>;
  config.database = { url_env: URL_ENV, lease_seconds: 5 };
  config.defaults = { ...config.defaults, incremental_cron: NEVER, full_cron: NEVER };
  writeFileSync(harness.configPath, stringify(config));
  harness.env[URL_ENV] = url;
}

/**
 * Every command with `--json`, called with it; `document` is what its JSON holds besides `error`
 * when it stopped on an error (the others print `{ error }` alone).
 */
const JSON_COMMANDS: readonly { args: readonly string[]; document?: Record<string, unknown> }[] = [
  { args: ["sync"], document: { outcome: "not_all_succeeded", mirrors: [] } },
  { args: ["status"] },
  { args: ["search", "--user", "user1@example.com", "release notes"] },
  { args: ["plan"], document: { pending: null, problems: null, mirrors: [] } },
  { args: ["pause", "--mirror", "main"] },
  { args: ["resume", "--mirror", "main"] },
  { args: ["trigger", "--mirror", "main"] },
  { args: ["history"] },
  { args: ["problems"] },
  { args: ["approve-sweep", "--mirror", "main"] },
  { args: ["forget", "--mirror", "removed"] },
];

/** Each `--json` command against the URL, search enabled so that `search` gets as far as the database. */
async function jsonCommandsAgainst(url: string) {
  h = await createHarness();
  useUrl(h, url);
  const config = parse(readFileSync(h.configPath, "utf8")) as Record<string, unknown>;
  writeFileSync(h.configPath, stringify({ ...config, search: { enabled: true } }));
  const harness = h;
  return Promise.all(
    JSON_COMMANDS.map(async ({ args, document }) => ({
      name: args[0],
      document,
      result: await harness.cli([...args, "--json"]),
    })),
  );
}

it("lists every command that has --json", () => {
  const withJson = Object.entries(HELP).filter(([, help]) => help.usage.includes("[--json]"));
  expect(JSON_COMMANDS.map((c) => c.args[0])).toEqual(withJson.map(([name]) => name));
});

describe.skipIf(!available)("the CLI on PostgreSQL", () => {
  it("--json: a server that does not answer still gets the command's JSON on stdout, its error the stderr line's (exit 1)", async () => {
    for (const { name, document, result } of await jsonCommandsAgainst(
      "postgres://postgres:pw-0f-the-test@127.0.0.1:1/postgres",
    )) {
      expect(result.code, `${name}: ${result.stderr}`).toBe(1);
      const [line, ...more] = result.stderr.trim().split("\n");
      expect(more, name).toEqual([]);
      expect(line, name).toMatch(/^syncmirror: cannot reach the PostgreSQL database .*run the command again/);
      expect(JSON.parse(result.stdout), name).toEqual({
        ...document,
        error: { code: "DB_UNAVAILABLE", message: line?.replace(/^syncmirror: /, "") },
      });
      expect(result.stderr + result.stdout).not.toContain("pw-0f-the-test");
    }
  });

  it("--json: a database that does not exist exits 2 with nothing on stdout, like bad usage", async () => {
    for (const { name, result } of await jsonCommandsAgainst(
      "postgres://postgres@127.0.0.1:5432/syncmirror_no_such_db",
    )) {
      expect(result.code, `${name}: ${result.stderr}`).toBe(2);
      expect(result.stderr, name).toContain("does not exist");
      expect(result.stdout, name).toBe("");
    }
  });

  it("exits 2 for a database that does not exist, naming the variable and never the URL or password", async () => {
    h = await createHarness({ dialect: "postgres" });
    const url = "postgres://postgres:pw-0f-the-test@127.0.0.1:5432/syncmirror_no_such_db";
    useUrl(h, url);
    for (const command of [["sync"], ["status"], ["run"]]) {
      const result = await h.cli(command);
      expect(result.code, `${command[0]}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toContain(`$${URL_ENV}`);
      expect(result.stderr).toContain("does not exist");
      expect(result.stderr + result.stdout).not.toContain("pw-0f-the-test");
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it("keeps a daemon alive and unready while the server does not answer, retrying with backoff", async () => {
    h = await createHarness({ dialect: "postgres" });
    useUrl(h, "postgres://postgres:pw-0f-the-test@127.0.0.1:1/postgres");
    daemon = await startDaemon(h);
    await until(
      () => daemon?.stderr().includes("database unreachable; retrying (not ready)"),
      "the retry log line",
    );
    expect((await daemon.get("/readyz")).status).toBe(503);
    expect((await daemon.get("/healthz")).status).toBe(200);
    expect(daemon.stderr()).not.toContain("pw-0f-the-test");
    const stopped = await daemon.stop("SIGTERM");
    expect(stopped.code).toBe(0);
  });
});
