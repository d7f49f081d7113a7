/**
 * The config file's promises, black-box through the built CLI (SPEC "Commands" and "Config file"):
 * every command that reads a config refuses a broken one with exit 2, one message naming the file,
 * the key path and what is wrong, nothing on stdout, no stack trace, no secret value anywhere, and
 * nothing started (no database file, no request upstream). The path comes from `--config`, else
 * `$SYNCMIRROR_CONFIG`, else `config/syncmirror.yaml`; what a file leaves out takes the defaults
 * SPEC shows, and a mirror may override every key of `defaults:`.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { spawnCli } from "../../helpers/daemon.js";
import { createHarness, type Harness, TOKEN_ENV } from "../../helpers/mirror-harness.js";
import { buildOnce } from "../daemon/setup.js";

const FILE_SECRET = "tok_written_in_the_file_8c1f";
const HEX_TOKEN = "a3f6c2a918d4e4b7a9c152e8f0d6b1a4";
const PG_PASSWORD = "pgpass_in_the_file_77d2";
const HTTP_TOKEN_ENV = "SYNCMIRROR_TEST_HTTP_TOKEN";
const HTTP_TOKEN = "http_token_from_env_51ab";
const STACK = /\n\s+at |node:internal|ZodError|^\s*\{\s*$/m;

/** Every command that reads the config, with the arguments it needs besides `--config`. */
const COMMANDS: [string, ...string[]][] = [
  ["run"],
  ["sync"],
  ["status"],
  ["check"],
  ["history"],
  ["problems"],
  ["pause", "--mirror", "main"],
  ["resume", "--mirror", "main"],
  ["trigger", "--mirror", "main"],
  ["approve-sweep", "--mirror", "main"],
  ["plan"],
  ["apply"],
  ["copy-store", "--from", "/nonexistent/mirror.db"],
  ["changes", "--after", "0"],
  ["search", "--user", "ana@example.com", "proposal"],
  ["reindex"],
];

let h: Harness;
let dbPath: string;
let env: Record<string, string | undefined>;

interface Loose {
  api: Record<string, unknown>;
  database: Record<string, unknown>;
  defaults: Record<string, unknown>;
  mirrors: Record<string, unknown>[];
  [key: string]: unknown;
}

/** A valid config: the simulator, a SQLite file that must never appear, one mirror `main`. */
function valid(): Loose {
  return {
    api: { base_url: h.sim.baseUrl, token_env: TOKEN_ENV, max_attempts: 1 },
    database: { path: dbPath },
    http: { listen: "127.0.0.1:0", token_env: HTTP_TOKEN_ENV },
    defaults: { poll_initial_seconds: 0.01, poll_max_seconds: 0.05 },
    mirrors: [{ name: "main", sync_config_id: h.sim.syncConfigId }],
  };
}
const first = (c: Loose): Record<string, unknown> => c.mirrors[0] as Record<string, unknown>;
const declared = { name: "sales", instructions: "Collect proposals.", servers: ["Notion"], all_users: true };

interface Case {
  name: string;
  edit?: (c: Loose) => void;
  /** Raw YAML instead of an edit. */
  text?: string;
  env?: Record<string, string | undefined>;
  /** The key path the message names (absent: the file itself is the problem). */
  key?: string;
  /** What is wrong, in the message. */
  says: RegExp;
  /** The command to run it through, when only some commands meet the problem. */
  command?: [string, ...string[]];
}

const CASES: Case[] = [
  // The file itself.
  { name: "an empty file", text: "", key: "api", says: /required/ },
  { name: "a YAML list", text: "- a\n- b\n", says: /holds a YAML array, not the config.s sections/ },
  { name: "YAML that does not parse", text: "api: [unclosed\n", says: /YAML/ },
  {
    name: "a YAML alias inside its own anchor",
    text: "api:\n  base_url: http://127.0.0.1:1/api/v1\nmirrors:\n  - &m\n    name: main\n    sync_config_id: x\n    again: *m\n",
    key: "mirrors[0].again",
    says: /alias/,
  },
  { name: "a YAML list holding itself", text: "&l [*l]\n", key: "[0]", says: /alias/ },
  {
    name: "a key written twice in one section",
    text: "api:\n  base_url: http://127.0.0.1:1/api/v1\n  timeout_seconds: 5\n  timeout_seconds: 6\nmirrors: []\n",
    key: "api.timeout_seconds",
    says: /twice/,
  },
  {
    name: "a section written twice",
    text: "defaults:\n  timezone: UTC\napi:\n  base_url: http://127.0.0.1:1/api/v1\ndefaults:\n  full_cron: 0 2 * * *\n",
    key: "defaults",
    says: /twice.*lines 1 and 5/,
  },
  {
    // Two files concatenated, or a Kubernetes manifest's habit.
    name: "two YAML documents in one file",
    text: "api:\n  base_url: http://127.0.0.1:1/api/v1\n---\nmirrors: []\n",
    says: /more than one YAML document.*line 3/,
  },
  {
    name: "a tab as indentation",
    text: "api:\n\tbase_url: http://127.0.0.1:1/api/v1\n",
    says: /YAML: Tabs .*line 2/,
  },
  {
    // A JSON-style file with one brace too many: yaml quotes each piece it meets after it.
    name: "a token pasted after a stray closing brace",
    text: `{"api": {"base_url": "http://127.0.0.1:1/api/v1"}}}\napi_token: ${FILE_SECRET}\n`,
    says: /YAML: .*\(line 2, column 12\)/,
  },
  // Secrets written in the file.
  {
    name: "a token as api.token",
    edit: (c) => (c.api.token = FILE_SECRET),
    key: "api.token",
    says: /environment/,
  },
  {
    name: "a token as http.token",
    edit: (c) => ((c.http as Record<string, unknown>).token = FILE_SECRET),
    key: "http.token",
    says: /environment/,
  },
  {
    name: "a token under a mirror",
    edit: (c) => (first(c).api_key = FILE_SECRET),
    key: "mirrors[0].api_key",
    says: /token/,
  },
  {
    name: "a token written in place of api.token_env",
    edit: (c) => (c.api.token_env = `ghp_${FILE_SECRET}_A1b2C3d4E5f6G7h8`),
    key: "api.token_env",
    says: /token/,
  },
  {
    name: "a lowercase hex token written in place of http.token_env",
    command: ["run"],
    edit: (c) => ((c.http as Record<string, unknown>).token_env = HEX_TOKEN),
    key: "http.token_env",
    says: /token/,
  },
  {
    name: "a lowercase hex token written in place of api.token_env",
    command: ["sync"],
    edit: (c) => (c.api.token_env = HEX_TOKEN),
    key: "api.token_env",
    says: /token/,
  },
  {
    name: "the environment's API token pasted in a mirror's continue_message",
    edit: (c) => (first(c).continue_message = `use ${h.sim.token}`),
    key: "mirrors[0].continue_message",
    says: /token/,
  },
  {
    name: "the environment's HTTP token pasted in a declared config's instructions",
    edit: (c) => {
      delete first(c).sync_config_id;
      first(c).sync_config = { ...declared, instructions: `bearer ${HTTP_TOKEN}` };
    },
    key: "mirrors[0].sync_config.instructions",
    says: /token/,
  },
  {
    name: "a password in api.base_url",
    edit: (c) => (c.api.base_url = h.sim.baseUrl.replace("http://", `http://ops:${FILE_SECRET}@`)),
    key: "api.base_url",
    says: /password|credential|environment/,
  },
  {
    name: "a URL with a password under an unrelated key",
    edit: (c) => (first(c).continue_message = `Read https://bot:${FILE_SECRET}@wiki.example.com first.`),
    key: "mirrors[0].continue_message",
    says: /password/,
  },
  {
    name: "a token in api.base_url's query string",
    edit: (c) => (c.api.base_url = `${h.sim.baseUrl}?token=${FILE_SECRET}`),
    key: "api.base_url",
    says: /token|query|environment/,
  },
  {
    name: "a postgres:// URL as database.url",
    edit: (c) => (c.database = { url: `postgres://app:${PG_PASSWORD}@db:5432/mirror` }),
    key: "database.url",
    says: /url_env|environment/,
  },
  {
    name: "a postgres:// URL written in place of database.url_env",
    edit: (c) => (c.database = { url_env: `postgres://app:${PG_PASSWORD}@db:5432/mirror` }),
    key: "database.url_env",
    says: /url_env|environment/,
  },
  {
    name: "a postgresql:// URL in database.path",
    edit: (c) => (c.database = { path: `postgresql://app:${PG_PASSWORD}@db/mirror` }),
    key: "database.path",
    says: /url_env|environment/,
  },
  {
    // `database: {postgres://app:pw@db/mirror}`: a flow mapping makes the URL a key with no value.
    name: "a postgres:// URL written as a key of database",
    edit: (c) => (c.database = { [`postgres://app:${PG_PASSWORD}@db:5432/mirror`]: null }),
    key: "database",
    says: /url_env|environment/,
  },
  {
    name: "a URL with a password written as a key of a mirror",
    edit: (c) => (first(c)[`https://bot:${FILE_SECRET}@wiki.example.com`] = null),
    key: "mirrors[0]",
    says: /password/,
  },
  {
    // `api: {ghp_...:}`: a token pasted on a line of its own with a colon after it.
    name: "a token-shaped string written as a key of api",
    edit: (c) => (c.api[`ghp_${FILE_SECRET}_A1b2C3d4E5f6G7h8`] = null),
    key: "api",
    says: /token/,
  },
  {
    name: "the environment's API token written as a key of api",
    edit: (c) => (c.api[h.sim.token] = true),
    key: "api",
    says: /token/,
  },
  {
    name: "a postgres:// URL under an unrelated key",
    edit: (c) => (first(c).continue_message = `postgres://app:${PG_PASSWORD}@db/mirror`),
    key: "mirrors[0].continue_message",
    says: /url_env|environment/,
  },
  // The token comes only from the environment.
  {
    // Only commands that talk to the service need the token (status, history, reindex... do not).
    name: "the API token's environment variable unset",
    command: ["sync"],
    env: { [TOKEN_ENV]: undefined },
    key: "api.token_env",
    says: new RegExp(`${TOKEN_ENV}.*not set`),
  },
  // database: exactly one of path and url_env.
  {
    name: "both database.path and database.url_env",
    edit: (c) => (c.database.url_env = "SYNCMIRROR_TEST_SOME_URL"),
    key: "database",
    says: /exactly one/,
  },
  {
    name: "database.url_env naming an unset variable",
    // `search` first says search is not enabled, which this file does not ask for.
    command: ["history"],
    edit: (c) => (c.database = { url_env: "SYNCMIRROR_TEST_UNSET_URL" }),
    key: "database.url_env",
    says: /SYNCMIRROR_TEST_UNSET_URL.*not set/,
  },
  {
    // `SYNCMIRROR_DATABASE_URL=` in an env file: the variable is there, its value is not.
    name: "database.url_env naming a variable set but empty",
    command: ["status"],
    edit: (c) => (c.database = { url_env: "SYNCMIRROR_TEST_EMPTY_URL" }),
    env: { SYNCMIRROR_TEST_EMPTY_URL: "" },
    key: "database.url_env",
    says: /SYNCMIRROR_TEST_EMPTY_URL is set but empty/,
  },
  {
    // A DATABASE_URL shared with another tool, or a SQLite path set where a URL belongs.
    name: "database.url_env naming a variable that holds no postgres:// URL",
    command: ["status"],
    edit: (c) => (c.database = { url_env: "SYNCMIRROR_TEST_MYSQL_URL" }),
    env: { SYNCMIRROR_TEST_MYSQL_URL: `mysql://app:${PG_PASSWORD}@db/mirror` },
    key: "database.url_env",
    says: /SYNCMIRROR_TEST_MYSQL_URL does not hold a postgres:\/\/ URL/,
  },
  { name: "an empty database.path", edit: (c) => (c.database.path = ""), key: "database.path", says: /./ },
  {
    // A PostgreSQL setting beside a SQLite file: the file would be used, the setting silently not.
    name: "database.pool_size with database.path",
    edit: (c) => (c.database.pool_size = 8),
    key: "database.pool_size",
    says: /PostgreSQL only .*database\.url_env/,
  },
  // Mirrors: names, uniqueness, exactly one of sync_config_id / sync_config.
  { name: "no mirrors", edit: (c) => (c.mirrors = []), key: "mirrors", says: /at least one/ },
  {
    name: "mirrors as a map",
    edit: (c) => (c.mirrors = { main: { sync_config_id: "x" } } as never),
    key: "mirrors",
    says: /array|list/,
  },
  {
    name: "a mirror name in capitals",
    edit: (c) => (first(c).name = "Eng-Wiki"),
    key: "mirrors[0].name",
    says: /\[a-z0-9_-\]\+/,
  },
  {
    name: "a mirror name with a dot",
    edit: (c) => (first(c).name = "eng.wiki"),
    key: "mirrors[0].name",
    says: /\[a-z0-9_-\]\+/,
  },
  { name: "an empty mirror name", edit: (c) => (first(c).name = ""), key: "mirrors[0].name", says: /./ },
  {
    name: "a mirror without a name",
    edit: (c) => delete first(c).name,
    key: "mirrors[0].name",
    says: /required/,
  },
  {
    name: "two mirrors of one name",
    edit: (c) => c.mirrors.push({ name: "main", sync_config: declared }),
    key: "mirrors[1].name",
    says: /duplicate|unique/,
  },
  {
    name: "both sync_config_id and sync_config",
    edit: (c) => (first(c).sync_config = declared),
    key: "mirrors[0]",
    says: /exactly one of sync_config_id .*sync_config/,
  },
  {
    name: "neither sync_config_id nor sync_config",
    edit: (c) => delete first(c).sync_config_id,
    key: "mirrors[0]",
    says: /exactly one of sync_config_id .*sync_config/,
  },
  {
    name: "two mirrors of one sync_config_id",
    edit: (c) => c.mirrors.push({ name: "second", sync_config_id: h.sim.syncConfigId }),
    key: "mirrors[1].sync_config_id",
    says: /both/,
  },
  {
    name: "a declared config with both users and all_users",
    edit: (c) => {
      delete first(c).sync_config_id;
      first(c).sync_config = { ...declared, users: ["ana@example.com"] };
    },
    key: "mirrors[0].sync_config",
    says: /users/,
  },
  {
    name: "a declared config with no servers",
    edit: (c) => {
      delete first(c).sync_config_id;
      first(c).sync_config = { ...declared, servers: [] };
    },
    key: "mirrors[0].sync_config.servers",
    says: /./,
  },
  {
    name: "an unknown key in a mirror",
    edit: (c) => (first(c).full_crom = "0 3 * * *"),
    key: "mirrors[0].full_crom",
    says: /not a known key/,
  },
  // Other sections.
  {
    name: "$SYNCMIRROR_HTTP_LISTEN that is no address",
    command: ["run"],
    env: { SYNCMIRROR_HTTP_LISTEN: "all interfaces" },
    key: "http.listen",
    says: /\$SYNCMIRROR_HTTP_LISTEN.*host:port/,
  },
  { name: "api.max_attempts 0", edit: (c) => (c.api.max_attempts = 0), key: "api.max_attempts", says: /./ },
  {
    name: "api.timeout_seconds 0",
    edit: (c) => (c.api.timeout_seconds = 0),
    key: "api.timeout_seconds",
    says: /./,
  },
  {
    name: "an http.listen that is no address",
    edit: (c) => ((c.http as Record<string, unknown>).listen = "everywhere please"),
    key: "http.listen",
    says: /./,
  },
  {
    name: "history.keep_days 0",
    edit: (c) => (c.history = { keep_days: 0 }),
    key: "history.keep_days",
    says: /./,
  },
  {
    name: "manage_sync_configs as a word",
    edit: (c) => (c.manage_sync_configs = "sometimes"),
    key: "manage_sync_configs",
    says: /./,
  },
  // Values past what a timer or a date can hold: a 25-day timer fires at once, a date before
  // year -271821 cannot be written.
  {
    name: "api.timeout_seconds longer than a timer holds",
    edit: (c) => (c.api.timeout_seconds = 3_000_000),
    key: "api.timeout_seconds",
    says: /at most 2147483/,
  },
  {
    name: "a mirror's poll_max_seconds longer than a timer holds",
    edit: (c) => (first(c).poll_max_seconds = 3_000_000),
    key: "mirrors[0].poll_max_seconds",
    says: /at most 2147483/,
  },
  {
    name: "defaults.since_overlap_seconds of millions of years",
    edit: (c) => (c.defaults.since_overlap_seconds = 1e15),
    key: "defaults.since_overlap_seconds",
    says: /at most/,
  },
  {
    name: "history.keep_days of a billion days",
    edit: (c) => (c.history = { keep_days: 1e9 }),
    key: "history.keep_days",
    says: /at most/,
  },
  // Every key of defaults, wrong in defaults and wrong as a mirror's override.
  ...(
    [
      ["incremental_cron", "every quarter hour"],
      ["full_cron", "0 25 * * *"],
      ["timezone", "Mars/Olympus_Mons"],
      ["since_overlap_seconds", -1],
      ["poll_initial_seconds", 0],
      ["poll_max_seconds", -5],
      ["run_timeout_minutes", 0],
      ["continue_incomplete", -1],
      ["continue_message", ""],
      ["delete_after_missed_full", 0],
      ["max_delete_fraction", 1.5],
      ["inaccessible_grace_hours", -1],
    ] as const
  ).flatMap(([key, bad]): Case[] => [
    {
      name: `defaults.${key} = ${JSON.stringify(bad)}`,
      edit: (c) => (c.defaults[key] = bad),
      key: `defaults.${key}`,
      says: /./,
    },
    {
      name: `a mirror's ${key} = ${JSON.stringify(bad)}`,
      edit: (c) => (first(c)[key] = bad),
      key: `mirrors[0].${key}`,
      says: /./,
    },
  ]),
];

beforeAll(async () => {
  buildOnce();
  h = await createHarness({ sim: { docs: 1 } });
  dbPath = join(h.dir, "never.db");
  env = { ...h.env, [HTTP_TOKEN_ENV]: HTTP_TOKEN };
  delete env.SYNCMIRROR_CONFIG;
});
afterAll(async () => {
  await h.close();
});

async function cli(args: string[], extraEnv: Record<string, string | undefined> = {}, cwd?: string) {
  const p = spawnCli(args, { ...env, ...extraEnv }, { cwd });
  // A command that started instead of refusing (`run` serves until stopped) fails the test, not hangs it.
  const started = setTimeout(() => p.child.kill("SIGKILL"), 20_000);
  const { code } = await p.exited;
  clearTimeout(started);
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

let written = 0;
/** Writes the case's file; each file names a database path of its own, so one leak cannot hide another. */
function write(c: Case, path = h.configPath): void {
  dbPath = join(h.dir, `never-${++written}.db`);
  const config = valid();
  c.edit?.(config);
  writeFileSync(path, c.text ?? stringify(config));
}

/** Exit 2, the file, key path and complaint named, nothing else printed, no secret, nothing started. */
async function expectRefused(command: [string, ...string[]], c: Case): Promise<void> {
  const requests = h.sim.requests.length;
  const r = await cli([...command, "--config", h.configPath], c.env);
  const what = `${command[0]} with ${c.name}:\n${r.stderr}`;
  expect(r.code, what).toBe(2);
  expect(r.stdout, what).toBe("");
  expect(r.stderr, what).toContain(h.configPath);
  if (c.key) expect(r.stderr, what).toContain(c.key);
  expect(r.stderr, what).toMatch(c.says);
  expect(r.stderr, what).not.toMatch(STACK);
  for (const secret of [FILE_SECRET, HEX_TOKEN, PG_PASSWORD, h.sim.token, HTTP_TOKEN])
    expect(`${r.stdout}${r.stderr}`, `${what}\nleaks a secret`).not.toContain(secret);
  expect(existsSync(dbPath), `${what}\ncreated the database`).toBe(false);
  expect(h.sim.requests.length, `${what}\nreached the API`).toBe(requests);
}

describe("a broken config file, through the CLI", () => {
  // Each case through one command, in turn, so every command meets several cases.
  it.each(
    CASES.map(
      (c, i) => [c.name, c.command ?? (COMMANDS[i % COMMANDS.length] as [string, ...string[]]), c] as const,
    ),
  )(
    "%s, through %s: exit 2 naming the file, the key and what is wrong; nothing starts",
    async (_name, command, c) => {
      write(c);
      await expectRefused(command, c);
    },
  );

  const SECRETS = CASES.filter((c) =>
    [
      "a token as api.token",
      "a postgres:// URL as database.url",
      "both sync_config_id and sync_config",
    ].includes(c.name),
  );
  it.each(COMMANDS.map((command) => [command.join(" "), command] as const))(
    "%s: refuses a token in the file, a database URL in the file and a mirror with two configs alike",
    async (_name, command) => {
      for (const c of SECRETS) {
        write(c);
        await expectRefused(command, c);
      }
    },
  );

  it("reports every error of the file at once, each by its key path", async () => {
    const c: Case = {
      name: "three errors",
      edit: (config) => {
        config.defaults.max_delete_fraction = 2;
        first(config).name = "Main";
        config.mirrors.push({ name: "b", sync_config_id: "other", run_timeout_minutes: -1 });
      },
      says: /./,
    };
    write(c);
    const r = await cli(["check", "--config", h.configPath]);
    expect(r.code).toBe(2);
    for (const key of ["defaults.max_delete_fraction", "mirrors[0].name", "mirrors[1].run_timeout_minutes"])
      expect(r.stderr).toContain(key);
  });
});

describe("where the config comes from", () => {
  /** A working directory holding config/syncmirror.yaml, broken so that its message names it. */
  function cwdWithDefaultFile(): string {
    const cwd = join(h.dir, `cwd-${Math.random().toString(36).slice(2)}`);
    mkdirSync(join(cwd, "config"), { recursive: true });
    const config = valid();
    config.defaults.full_cron = "in the default file";
    writeFileSync(join(cwd, "config", "syncmirror.yaml"), stringify(config));
    return cwd;
  }

  it("$SYNCMIRROR_CONFIG before config/syncmirror.yaml, --config before both", async () => {
    const cwd = cwdWithDefaultFile();
    const fromEnv = join(h.dir, "from-env.yaml");
    const config = valid();
    config.defaults.incremental_cron = "in the env file";
    writeFileSync(fromEnv, stringify(config));

    const byEnv = await cli(["status"], { SYNCMIRROR_CONFIG: fromEnv }, cwd);
    expect(byEnv.code).toBe(2);
    expect(byEnv.stderr).toContain(fromEnv);
    expect(byEnv.stderr).toContain("defaults.incremental_cron");

    const byDefault = await cli(["status"], {}, cwd);
    expect(byDefault.code).toBe(2);
    expect(byDefault.stderr).toContain(join("config", "syncmirror.yaml"));
    expect(byDefault.stderr).toContain("defaults.full_cron");

    write({ name: "valid", says: /./ });
    const byFlag = await cli(["status", "--config", h.configPath], { SYNCMIRROR_CONFIG: fromEnv }, cwd);
    expect(byFlag.code, byFlag.stderr).toBe(0);
  });

  it("a directory as the config path, by --config or $SYNCMIRROR_CONFIG: exit 2 naming it, nothing started", async () => {
    const dir = join(h.dir, "config-dir");
    mkdirSync(dir, { recursive: true });
    for (const [args, extra] of [
      [["run", "--config", dir], {}],
      [["sync"], { SYNCMIRROR_CONFIG: dir }],
    ] as const) {
      const r = await cli([...args], extra);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toContain(dir);
      expect(r.stderr).toMatch(/cannot read the file/);
      expect(r.stderr).not.toMatch(STACK);
    }
  });

  it("no config file anywhere: exit 2 naming config/syncmirror.yaml, nothing on stdout, no stack trace", async () => {
    const cwd = join(h.dir, "empty-cwd");
    mkdirSync(cwd, { recursive: true });
    for (const command of ["sync", "status", "check", "run"]) {
      const r = await cli([command], {}, cwd);
      expect(r.code, command).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toContain(join("config", "syncmirror.yaml"));
      expect(r.stderr).not.toMatch(STACK);
    }
  });
});

describe("defaults and per-mirror overrides", () => {
  it("a file with only api.base_url and a mirror: the token from $SYNCMIRROR_API_TOKEN, the mirror in data/mirror.db", async () => {
    const cwd = join(h.dir, "minimal");
    mkdirSync(cwd, { recursive: true });
    const path = join(cwd, "minimal.yaml");
    writeFileSync(
      path,
      stringify({
        api: { base_url: h.sim.baseUrl },
        mirrors: [{ name: "main", sync_config_id: h.sim.syncConfigId }],
      }),
    );
    // check reaches the API with the token; pause writes to the database.
    const r = await cli(
      ["check", "--config", path],
      { SYNCMIRROR_API_TOKEN: h.sim.token, [TOKEN_ENV]: undefined },
      cwd,
    );
    expect(r.code, r.stderr).toBe(0);
    const paused = await cli(["pause", "--mirror", "main", "--config", path], {}, cwd);
    expect(paused.code, paused.stderr).toBe(0);
    expect(existsSync(join(cwd, "data", "mirror.db"))).toBe(true);

    const status = await cli(["status", "--json", "--config", path], {}, cwd);
    const [mirror] = JSON.parse(status.stdout).mirrors;
    // defaults: incremental every 15 minutes, full at 03:00, read in UTC.
    expect(new Date(mirror.next_incremental_at).getUTCMinutes() % 15).toBe(0);
    expect(mirror.next_full_at).toMatch(/T03:00:00(\.000)?Z$/);
  });

  it("a mirror may override every key of defaults; the others keep defaults'", async () => {
    const config = valid();
    Object.assign(config.defaults, {
      incremental_cron: "0 * * * *",
      full_cron: "0 3 * * *",
      timezone: "UTC",
    });
    config.mirrors.push({
      name: "tokyo_2",
      sync_config_id: "another-config",
      incremental_cron: "7 * * * *",
      full_cron: "30 4 * * *",
      timezone: "Asia/Tokyo",
      since_overlap_seconds: 60,
      poll_initial_seconds: 0.02,
      poll_max_seconds: 0.04,
      run_timeout_minutes: 30,
      continue_incomplete: 2,
      continue_message: "Keep going.",
      delete_after_missed_full: 3,
      max_delete_fraction: 0.2,
      inaccessible_grace_hours: 24,
    });
    writeFileSync(h.configPath, stringify(config));
    const r = await cli(["status", "--json", "--config", h.configPath]);
    expect(r.code, r.stderr).toBe(0);
    const byName = Object.fromEntries(
      JSON.parse(r.stdout).mirrors.map((m: { mirror: string }) => [m.mirror, m]),
    );
    expect(new Date(byName.main.next_incremental_at).getUTCMinutes()).toBe(0);
    expect(byName.main.next_full_at).toMatch(/T03:00:00(\.000)?Z$/);
    expect(new Date(byName.tokyo_2.next_incremental_at).getUTCMinutes()).toBe(7);
    // 04:30 in Tokyo (UTC+9, no daylight saving) is 19:30 UTC.
    expect(byName.tokyo_2.next_full_at).toMatch(/T19:30:00(\.000)?Z$/);
  });
});
