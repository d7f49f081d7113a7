/**
 * Config fuzzing through the commands: each broken config is refused with exit 2, a message naming
 * the file and the key path, never the token's value, and nothing starts (no database file, or
 * nothing written to the PostgreSQL database; no request upstream). The table runs the `sync`
 * command in-process (the same function the CLI calls); the last tests run the real CLI for
 * `sync`, `run` and `check`.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { sync } from "../../../src/commands/sync.js";
import { createHarness, type Harness, TOKEN_ENV } from "../../helpers/mirror-harness.js";

let h: Harness;

/** Whether the command reached the store: the SQLite file exists, or PostgreSQL holds a mirror or a trigger. */
function storeTouched(harness: Harness): boolean {
  if (harness.dialect === "sqlite") return existsSync(harness.dbPath);
  return harness.query("SELECT 1 FROM mirror_state UNION ALL SELECT 1 FROM triggers").length > 0;
}
/** The harness's valid config, loosely typed so cases can break it. */
interface Loose {
  api: Record<string, unknown>;
  defaults: Record<string, unknown>;
  mirrors: Record<string, unknown>[];
  [key: string]: unknown;
}
let valid: Loose;
beforeAll(async () => {
  h = await createHarness({ sim: { docs: 1 } });
  valid = parse(readFileSync(h.configPath, "utf8"));
});
afterAll(async () => {
  await h.close();
});

type Edit = (c: Loose) => void;

const first = (c: Loose): Record<string, unknown> => c.mirrors[0] as Record<string, unknown>;

interface FuzzCase {
  name: string;
  edit?: Edit;
  /** Raw YAML instead of an edit. */
  text?: string;
  env?: Record<string, string | undefined>;
  /** Substrings the message must hold (the key path first). */
  says: string[];
}

const CASES: FuzzCase[] = [
  {
    name: "a string where a number goes",
    edit: (c) => (c.api.timeout_seconds = "ten"),
    says: ["api.timeout_seconds"],
  },
  {
    name: "a negative count",
    edit: (c) => (first(c).continue_incomplete = -1),
    says: ["mirrors[0].continue_incomplete"],
  },
  { name: "a list where an object goes", edit: (c) => (c.database = ["a.db"]), says: ["database"] },
  {
    name: "an unknown top-level key",
    edit: (c) => (c.mirorrs = []),
    says: ["mirorrs: is not a known key"],
  },
  {
    name: "an unknown nested key",
    edit: (c) => (c.defaults.incremental_crn = "* * * * *"),
    says: ["defaults.incremental_crn: is not a known key"],
  },
  {
    name: "duplicate mirror names",
    edit: (c) => c.mirrors.push({ ...first(c) }),
    says: ["mirrors[1].name", 'duplicate mirror name "main"'],
  },
  {
    name: "a mirror name with spaces",
    edit: (c) => (first(c).name = "Eng Wiki"),
    says: ["mirrors[0].name", "[a-z0-9_-]+"],
  },
  {
    name: "an invalid cron",
    edit: (c) => (c.defaults.full_cron = "61 * * * *"),
    says: ["defaults.full_cron", "cron"],
  },
  {
    name: "a cron in words",
    edit: (c) => (first(c).incremental_cron = "every day"),
    says: ["mirrors[0].incremental_cron", "cron"],
  },
  {
    name: "an unknown time zone",
    edit: (c) => (c.defaults.timezone = "Mars/Olympus"),
    says: ["defaults.timezone"],
  },
  {
    name: "poll_max_seconds below poll_initial_seconds",
    edit: (c) => Object.assign(c.defaults, { poll_initial_seconds: 10, poll_max_seconds: 5 }),
    says: ["defaults.poll_max_seconds", "defaults.poll_initial_seconds"],
  },
  {
    name: "a mirror's poll_initial_seconds above the poll_max_seconds it inherits",
    edit: (c) => (first(c).poll_initial_seconds = 120),
    says: ["mirrors[0].poll_initial_seconds", "defaults.poll_max_seconds"],
  },
  { name: "no mirrors", edit: (c) => (c.mirrors = []), says: ["mirrors", "at least one mirror"] },
  {
    name: "no base_url",
    edit: (c) => delete (c.api as { base_url?: string }).base_url,
    says: ["api.base_url", "is required"],
  },
  {
    name: "a base_url that is not a URL",
    edit: (c) => (c.api.base_url = "api.example.com"),
    says: ["api.base_url"],
  },
  { name: "YAML that does not parse", text: "api: [unclosed\n", says: ["YAML"] },
  {
    name: "a YAML key given twice",
    text: "api:\n  base_url: http://x\napi:\n  base_url: http://y\n",
    says: ["YAML"],
  },
  {
    name: "the token env var unset",
    env: { [TOKEN_ENV]: undefined },
    says: ["api.token_env", `environment variable ${TOKEN_ENV} is not set`],
  },
  {
    name: "a token written in the file as api.token",
    edit: (c) => (c.api.token = "tok_written_in_the_file_123"),
    says: ["api.token", "tokens are read only from the environment"],
  },
  {
    name: "the environment's token pasted under another key",
    edit: (c) => (first(c).continue_message = `use ${h.sim.token} please`),
    says: ["mirrors[0].continue_message", "holds a token"],
  },
];

function captureIo(env: Record<string, string | undefined>) {
  let stdout = "";
  let stderr = "";
  const sink = (write: (s: string) => void) =>
    new Writable({
      write(chunk, _enc, done) {
        write(String(chunk));
        done();
      },
    });
  return {
    io: {
      stdout: sink((s) => (stdout += s)),
      stderr: sink((s) => (stderr += s)),
      env,
      signal: new AbortController().signal,
      isTty: false,
    },
    out: () => ({ stdout, stderr }),
  };
}

describe("config fuzzing", () => {
  it.each(CASES)("$name: exit 2 naming the file and key path; nothing starts", async (c) => {
    const config = structuredClone(valid);
    c.edit?.(config);
    writeFileSync(h.configPath, c.text ?? stringify(config));
    const requests = h.sim.requests.length;
    const { io, out } = captureIo({ ...h.env, ...c.env });

    const code = await sync(["--config", h.configPath], io);
    const { stdout, stderr } = out();
    expect(code, stderr).toBe(2);
    expect(stderr).toContain(h.configPath);
    expect(stderr.trimEnd().split("\n"), "one line, however many issues").toHaveLength(1);
    for (const s of c.says) expect(stderr).toContain(s);
    expect(stdout).toBe("");
    expect(`${stdout}${stderr}`).not.toContain(h.sim.token);
    expect(stderr).not.toContain("tok_written_in_the_file_123");
    expect(storeTouched(h), "no database was created or written").toBe(false);
    expect(h.sim.requests.length, "nothing reached the API").toBe(requests);
  });

  it.each([["sync"], ["run"], ["check"]])(
    "the real CLI `%s` exits 2 on a config error, before anything starts",
    async (cmd) => {
      const config = structuredClone(valid);
      config.api.token = "tok_written_in_the_file_123";
      config.defaults.full_cron = "every night";
      writeFileSync(h.configPath, stringify(config));
      const r = await h.cli([cmd]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`${h.configPath}: invalid config`);
      expect(r.stderr).toContain("api.token");
      expect(r.stderr).not.toContain("tok_written_in_the_file_123");
      expect(storeTouched(h)).toBe(false);
    },
  );
});
