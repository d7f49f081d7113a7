import { describe, expect, it } from "vitest";
import { loadConfig, parseConfig, requireToken, resolveConfigPath } from "../../src/config.js";
import { ConfigError, UsageError } from "../../src/errors.js";
import { issuesOf } from "../helpers/config-issues.js";

const ID = "3f6c2a91-8d4e-4b7a-9c15-2e8f0d6b1a47";
const base = `api:
  base_url: https://api.example.com/api/v1
mirrors:
  - name: eng-wiki
    sync_config_id: ${ID}
`;

describe("config", () => {
  it("reads the HTTP bearer token from the variable http.token_env names, and search.enabled", () => {
    const text = `${base}http:\n  token_env: MY_HTTP_TOKEN\nsearch:\n  enabled: true\n`;
    const config = parseConfig("cfg.yaml", text, { MY_HTTP_TOKEN: "http-secret-value" });
    expect(config.http).toMatchObject({ tokenEnv: "MY_HTTP_TOKEN", token: "http-secret-value" });
    expect(config.search.enabled).toBe(true);
    expect(parseConfig("cfg.yaml", text, { MY_HTTP_TOKEN: "" }).http.token).toBeUndefined();
    // A secret file's final newline is no part of the token a client sends.
    expect(parseConfig("cfg.yaml", text, { MY_HTTP_TOKEN: "http-secret-value\n" }).http.token).toBe(
      "http-secret-value",
    );
  });

  it("refuses the HTTP token written in the file, naming the key only", () => {
    const env = { SYNCMIRROR_HTTP_TOKEN: "http-secret-value" };
    const issues = issuesOf(`${base}    full_cron: "http-secret-value"\n`, env);
    expect(issues.map((i) => i.path)).toEqual(["mirrors[0].full_cron"]);
    expect(JSON.stringify(issues)).not.toContain("http-secret-value");
  });

  it("fills the documented defaults and lets a mirror override them", () => {
    const config = parseConfig("cfg.yaml", `${base}    full_cron: "0 2 * * 0"\n`, {
      SYNCMIRROR_API_TOKEN: "t0ken-value",
    });
    const [m] = config.mirrors;
    expect(m?.fullCron).toBe("0 2 * * 0");
    expect(m?.incrementalCron).toBe("*/15 * * * *");
    expect(m?.sinceOverlapSeconds).toBe(300);
    expect(m?.deleteAfterMissedFull).toBe(1);
    expect(m?.maxDeleteFraction).toBe(0.5);
    expect(m?.inaccessibleGraceHours).toBe(72);
    expect(config.database).toMatchObject({ kind: "sqlite", path: "data/mirror.db", leaseSeconds: 60 });
    expect(config.http).toEqual({
      host: "0.0.0.0",
      port: 9464,
      listenFrom: "http.listen",
      tokenEnv: "SYNCMIRROR_HTTP_TOKEN",
      token: undefined,
    });
    expect(config.search).toEqual({ enabled: false });
    expect(config.maxConcurrentMirrors).toBe(2);
    expect(requireToken(config)).toBe("t0ken-value");
    expect(Object.isFrozen(config)).toBe(true);
  });

  it("refuses poll_max_seconds below poll_initial_seconds, naming both keys where they are set", () => {
    const inDefaults = issuesOf(`${base}defaults:\n  poll_initial_seconds: 10\n  poll_max_seconds: 5\n`);
    expect(inDefaults).toEqual([
      {
        path: "defaults.poll_max_seconds",
        message: expect.stringMatching(/5 is less than defaults\.poll_initial_seconds \(10\)/),
      },
    ]);
    // A mirror's own poll_initial_seconds against the poll_max_seconds it inherits.
    const inMirror = issuesOf(`${base}    poll_initial_seconds: 120\n`);
    expect(inMirror).toEqual([
      {
        path: "mirrors[0].poll_initial_seconds",
        message: expect.stringMatching(/120 is more than defaults\.poll_max_seconds \(60\)/),
      },
    ]);
    const env = { SYNCMIRROR_API_TOKEN: "t0ken-value" };
    const equal = parseConfig("cfg.yaml", `${base}    poll_initial_seconds: 60\n`, env);
    expect(equal.mirrors[0]).toMatchObject({ pollInitialSeconds: 60, pollMaxSeconds: 60 });
    const raised = parseConfig(
      "cfg.yaml",
      `${base}    poll_initial_seconds: 120\n    poll_max_seconds: 300\n`,
      env,
    );
    expect(raised.mirrors[0]).toMatchObject({ pollInitialSeconds: 120, pollMaxSeconds: 300 });
  });

  it("names the key path of wrong types, unknown keys and invalid crons", () => {
    const issues = issuesOf(
      `${base}    since_overlap_seconds: "soon"\n    full_cron: "every day"\n    colour: blue\n`,
    );
    const paths = issues.map((i) => i.path);
    expect(paths).toContain("mirrors[0].since_overlap_seconds");
    expect(paths).toContain("mirrors[0].full_cron");
    expect(paths).toContain("mirrors[0].colour");
  });

  it("names each unknown key by its full path, at the top, in a section and in a mirror", () => {
    const issues = issuesOf(
      `${base}    colour: blue\nmirorrs: []\ndefaults:\n  incremental_crn: "* * * * *"\n  full_crn: "0 3 * * *"\n`,
    );
    expect(issues.map((i) => i.path).sort()).toEqual([
      "defaults.full_crn",
      "defaults.incremental_crn",
      "mirorrs",
      "mirrors[0].colour",
    ]);
    for (const issue of issues)
      expect(issue.message).toMatch(/^is not a known key: .*docs\/configuration\.md/);
  });

  it("reads the HTTP bearer token from http.token_env, and refuses it written in the file", () => {
    const env = { SYNCMIRROR_API_TOKEN: "t0ken-value", STATUS_TOKEN: "http-t0ken-value" };
    const config = parseConfig("cfg.yaml", `${base}http:\n  token_env: STATUS_TOKEN\n`, env);
    expect(config.http).toMatchObject({ tokenEnv: "STATUS_TOKEN", token: "http-t0ken-value" });
    const issues = issuesOf(`${base}http:\n  token_env: STATUS_TOKEN\n  listen: http-t0ken-value\n`, env);
    expect(issues.map((i) => i.path)).toContain("http.listen");
    expect(JSON.stringify(issues)).not.toContain("http-t0ken-value");
  });

  it("says what to do about a missing file, a YAML error, and an empty token variable", () => {
    const missing = (() => {
      try {
        loadConfig("/nonexistent/syncmirror.yaml", {});
      } catch (error) {
        return (error as Error).message;
      }
    })();
    expect(missing).toMatch(
      /\/nonexistent\/syncmirror\.yaml.*no such file: write one with syncmirror init.*copy config\/syncmirror\.example\.yaml/s,
    );
    expect(missing).toMatch(/--config FILE or \$SYNCMIRROR_CONFIG/);
    const [yaml] = issuesOf(`${base}  x: y: z\n`);
    expect(yaml?.message).toMatch(/^YAML: .+ \(line \d+, column \d+\)$/);
    const empty = parseConfig("cfg.yaml", base, { SYNCMIRROR_API_TOKEN: "" });
    expect(() => requireToken(empty)).toThrow(/SYNCMIRROR_API_TOKEN is set but empty/);
    const unset = parseConfig("cfg.yaml", base, {});
    expect(() => requireToken(unset)).toThrow(/SYNCMIRROR_API_TOKEN is not set/);
  });

  it("names the line and column of a YAML syntax error, never the text it met there (a token pasted after a stray brace)", () => {
    const secret = "ghp_Pasted0123456789abcdef";
    for (const text of [
      `{"api": {"base_url": "https://api.example.com/api/v1"}}}\napi_token: ${secret}\n`,
      `{"api": {"base_url": "https://api.example.com/api/v1"}}\n}\n"token": "${secret}"\n`,
      `api:\n  base_url: https://api.example.com/api/v1\n  token: |${secret}\n`,
    ]) {
      const issues = issuesOf(text);
      expect(issues.length, text).toBeGreaterThan(0);
      for (const issue of issues) expect(issue.message, text).toMatch(/^YAML: .+ \(line \d+, column \d+\)$/);
      expect(JSON.stringify(issues), text).not.toContain(secret);
    }
  });

  it("says an api.base_url without http:// or https:// needs one, in one message", () => {
    for (const url of ["api.example.com/api/v1", "localhost:8080/api/v1", "ftp://api.example.com/api/v1"]) {
      const issues = issuesOf(base.replace("https://api.example.com/api/v1", url));
      expect(issues, url).toEqual([
        {
          path: "api.base_url",
          message: expect.stringMatching(/http:\/\/ or https:\/\/.*e\.g\. https:\/\//),
        },
      ]);
    }
    expect(issuesOf(base.replace("api.example.com", "api.example.com:99999"))).toEqual([
      { path: "api.base_url", message: expect.stringMatching(/^is not a URL/) },
    ]);
    expect(
      issuesOf(base.replace("  base_url: https://api.example.com/api/v1\n", "  timeout_seconds: 5\n")),
    ).toEqual([{ path: "api.base_url", message: "is required (expected string)" }]);
  });

  it("says a fraction where a count belongs must be a whole number", () => {
    const issues = issuesOf(`${base}    continue_incomplete: 1.5\nmax_concurrent_mirrors: 2.5\n`);
    expect(issues).toEqual([
      { path: "max_concurrent_mirrors", message: "must be a whole number, not a fraction" },
      { path: "mirrors[0].continue_incomplete", message: "must be a whole number, not a fraction" },
    ]);
  });

  it("names a key written twice by its path and both lines; a secret written twice as a key by its section, never itself", () => {
    expect(issuesOf(`${base}defaults:\n  timezone: UTC\ndefaults:\n  full_cron: 0 2 * * *\n`)).toEqual([
      { path: "defaults", message: expect.stringMatching(/written twice .*lines 6 and 8/) },
    ]);
    expect(issuesOf(`${base}    name: other\n`).map((i) => i.path)).toEqual(["mirrors[0].name"]);
    const url = "postgres://app:s3cret-pw@db/mirror";
    const issues = issuesOf(`${base}database:\n  ${url}: 1\n  ${url}: 2\n`);
    expect(issues.map((i) => i.path)).toEqual(["database"]);
    expect(JSON.stringify(issues)).not.toContain("s3cret");
  });

  it("refuses two mirrors of one sync config, naming both", () => {
    const issues = issuesOf(`${base}  - name: eng-copy\n    sync_config_id: ${ID}\n`);
    expect(issues).toContainEqual({
      path: "mirrors[1].sync_config_id",
      message: expect.stringMatching(/eng-wiki.*eng-copy|eng-copy.*eng-wiki/),
    });
  });

  it("reads the export paging bounds, defaulting to 4 pages ahead per run and per pass, 250 resources a page", () => {
    const env = { SYNCMIRROR_API_TOKEN: "t0ken-value" };
    expect(parseConfig("cfg.yaml", base, env).export).toEqual({
      pagesAheadPerRun: 4,
      pagesAheadPerPass: 4,
      pageSize: 250,
    });
    const set = parseConfig(
      "cfg.yaml",
      `export:\n  pages_ahead_per_run: 0\n  pages_ahead_per_pass: 12\n  page_size: 500\n${base}`,
      env,
    );
    expect(set.export).toEqual({ pagesAheadPerRun: 0, pagesAheadPerPass: 12, pageSize: 500 });
    const paths = issuesOf(
      `export:\n  pages_ahead_per_run: -1\n  pages_ahead_per_pass: 1.5\n  window: 3\n${base}`,
    ).map((i) => i.path);
    expect(paths).toEqual(
      expect.arrayContaining(["export.pages_ahead_per_run", "export.pages_ahead_per_pass", "export.window"]),
    );
    // The service answers at most 500 resources a page.
    for (const size of [0, 501]) {
      expect(issuesOf(`export:\n  page_size: ${size}\n${base}`).map((i) => i.path)).toEqual([
        "export.page_size",
      ]);
    }
  });

  it("keeps the pass history 90 days unless history.keep_days says otherwise (a positive number)", () => {
    const env = { SYNCMIRROR_API_TOKEN: "t0ken-value" };
    expect(parseConfig("cfg.yaml", base, env).history).toEqual({ keepDays: 90 });
    expect(parseConfig("cfg.yaml", `history:\n  keep_days: 7.5\n${base}`, env).history).toEqual({
      keepDays: 7.5,
    });
    for (const bad of ["0", "-1", "forever"])
      expect(issuesOf(`history:\n  keep_days: ${bad}\n${base}`).map((i) => i.path)).toEqual([
        "history.keep_days",
      ]);
    expect(issuesOf(`history:\n  keep: 3\n${base}`).map((i) => i.path)).toEqual(["history.keep"]);
  });

  it("rejects duplicate mirror names and bad names", () => {
    const dup = `${base}  - name: eng-wiki\n    sync_config_id: other\n  - name: Bad Name\n    sync_config_id: x\n`;
    const issues = issuesOf(dup);
    expect(issues).toContainEqual(
      expect.objectContaining({ path: "mirrors[1].name", message: expect.stringMatching(/duplicate/) }),
    );
    expect(issues.map((i) => i.path)).toContain("mirrors[2].name");
  });

  it("rejects a token written in the file, naming the key and never the value", () => {
    const secret = "sk-live-abcdef123456";
    const error = (() => {
      try {
        parseConfig("cfg.yaml", base.replace("api:\n", `api:\n  token: ${secret}\n`), {});
      } catch (e) {
        return e as ConfigError;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect(error?.issues[0]?.path).toBe("api.token");
    expect(error?.message).not.toContain(secret);
  });

  it("rejects a postgres:// URL anywhere in a value, at the start or inside a sentence, naming the key only", () => {
    const url = "postgres://mirror:s3cret-pw@db.internal:5432/mirror";
    const cases: [string, string][] = [
      [base.replace("api:\n", `database:\n  url: ${url}\napi:\n`), "database.url"],
      [base.replace("api:\n", `database:\n  path: " ${url.toUpperCase()}"\napi:\n`), "database.path"],
      [
        `${base}defaults:\n  continue_message: "connect to ${url} and continue"\n`,
        "defaults.continue_message",
      ],
      [`${base}defaults:\n  continue_message: "url=postgresql://u:pw@h/db"\n`, "defaults.continue_message"],
    ];
    for (const [text, path] of cases) {
      const issues = issuesOf(text, {});
      expect(issues.map((i) => i.path)).toEqual([path]);
      expect(issues[0]?.message).toContain("holds a database URL");
      expect(JSON.stringify(issues)).not.toMatch(/s3cret|pw@/i);
    }
  });

  it("tells a database password written in the file to go into the URL in database.url_env, not the API token's variable", () => {
    const issues = issuesOf(
      base.replace("api:\n", "database:\n  url_env: SYNCMIRROR_DATABASE_URL\n  password: hunter2-pw\napi:\n"),
      { SYNCMIRROR_DATABASE_URL: "postgres://u@h/db" },
    );
    expect(issues.map((i) => i.path)).toEqual(["database.password"]);
    expect(issues[0]?.message).toContain("database.url_env");
    expect(issues[0]?.message).not.toContain("token");
    expect(JSON.stringify(issues)).not.toContain("hunter2");
  });

  it("rejects any key holding the token from the environment", () => {
    const token = "env-token-0123456789";
    const issues = issuesOf(`${base}    sync_config_id_note: ${token}\n`, { SYNCMIRROR_API_TOKEN: token });
    expect(issues[0]?.path).toBe("mirrors[0].sync_config_id_note");
    expect(JSON.stringify(issues)).not.toContain(token);
  });

  it("rejects a token written where a variable's name belongs, in api.token_env or http.token_env, never printing it", () => {
    const api = "Zc92M2RW9r2otmzRmBktK6LXSxGWuA2R";
    const http = "HttpTokValue9876";
    const cases: [string, Record<string, string>, string][] = [
      // The token its default variable holds, written as the variable's name.
      [base.replace("api:\n", `api:\n  token_env: ${api}\n`), { SYNCMIRROR_API_TOKEN: api }, "api.token_env"],
      [`${base}http:\n  token_env: ${http}\n`, { SYNCMIRROR_HTTP_TOKEN: http }, "http.token_env"],
      [
        base.replace("api:\n", `api:\n  token_env: ${http}\n`),
        { SYNCMIRROR_HTTP_TOKEN: http },
        "api.token_env",
      ],
      // No variable holds it, but it is shaped like a token, not like a variable's name.
      [base.replace("api:\n", `api:\n  token_env: ${api}\n`), {}, "api.token_env"],
    ];
    for (const [text, env, path] of cases) {
      const issues = issuesOf(text, env);
      expect(issues).toEqual([{ path, message: expect.stringMatching(/holds a token instead of the name/) }]);
      expect(JSON.stringify(issues)).not.toMatch(new RegExp(`${api}|${http}`));
    }
    expect(issuesOf(`${base}http:\n  token: ${http}\n`)[0]?.message).toMatch(/named by http\.token_env/);
  });

  it("says which environment variable to set when the token is missing", () => {
    const config = parseConfig("cfg.yaml", base.replace("api:\n", "api:\n  token_env: MY_TOKEN\n"), {});
    expect(() => requireToken(config)).toThrow(/MY_TOKEN is not set/);
  });

  it("rejects an invalid time zone, listen address and YAML syntax", () => {
    expect(issuesOf(`${base}    timezone: Mars/Olympus\n`).map((i) => i.path)).toContain(
      "mirrors[0].timezone",
    );
    expect(issuesOf(`${base}http:\n  listen: nowhere\n`).map((i) => i.path)).toContain("http.listen");
    expect(issuesOf("api: [unclosed\n")[0]?.message).toMatch(/YAML/);
    // Alias errors surface only when the document is read, not as parse errors.
    expect(issuesOf(`${base}x: *nowhere\n`)).toEqual([
      { path: "", message: expect.stringMatching(/^YAML: Unresolved alias .*nowhere/) },
    ]);
    const laughs = ["a: &a [x, x, x, x, x, x, x, x, x, x]"];
    for (const n of ["b", "c", "d", "e", "f"]) {
      const prev = String.fromCharCode(n.charCodeAt(0) - 1);
      laughs.push(
        `${n}: &${n} [*${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}]`,
      );
    }
    expect(issuesOf(`${laughs.join("\n")}\n`)[0]?.message).toMatch(/^YAML: .*alias/i);
    // A list or a bare word where the sections belong: what it is, and how to write one that works.
    expect(issuesOf("- a\n- b\n")).toEqual([
      {
        path: "",
        message:
          "the file holds a YAML array, not the config's sections (api:, mirrors:, ...): write it as config/syncmirror.example.yaml shows, or run syncmirror init",
      },
    ]);
    expect(issuesOf("hello\n")[0]?.message).toMatch(/^the file holds a YAML string, .*syncmirror init$/);
    expect(issuesOf(`api:\n${base.slice(base.indexOf("mirrors:"))}`)).toContainEqual({
      path: "api",
      message: "is empty (expected object)",
    });
  });

  it("reads a section left empty (every line under it commented out) as its defaults; api: left empty is still an error", () => {
    const env = { SYNCMIRROR_API_TOKEN: "t0ken-value" };
    const emptied = parseConfig(
      "cfg.yaml",
      `${base}defaults:\n  # incremental_cron: "*/5 * * * *"\nhttp:\nsearch:\nexport:\nhistory:\nmanage_sync_configs:\n`,
      env,
    );
    const plain = parseConfig("cfg.yaml", base, env);
    expect({ ...emptied, file: "" }).toEqual({ ...plain, file: "" });
    expect(issuesOf(`api:\n${base.slice(base.indexOf("mirrors:"))}`)).toContainEqual({
      path: "api",
      message: "is empty (expected object)",
    });
  });

  it("resolves the config path from the flag, then the environment (an empty variable counts as unset), then the default", () => {
    expect(resolveConfigPath("a.yaml", { SYNCMIRROR_CONFIG: "b.yaml" })).toBe("a.yaml");
    expect(resolveConfigPath(undefined, { SYNCMIRROR_CONFIG: "b.yaml" })).toBe("b.yaml");
    expect(resolveConfigPath(undefined, {})).toBe("config/syncmirror.yaml");
    expect(resolveConfigPath(undefined, { SYNCMIRROR_CONFIG: "" })).toBe("config/syncmirror.yaml");
    expect(() => resolveConfigPath("", { SYNCMIRROR_CONFIG: "b.yaml" })).toThrow(UsageError);
  });
});
