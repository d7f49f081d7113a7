/**
 * Config problems a first-time user meets, each refused with a message that names the key (or the
 * variable) and what belongs there: a listen port written as a number, the listen address from
 * $SYNCMIRROR_HTTP_LISTEN, a cron field out of range, LOG_LEVEL, and the files syncmirror writes
 * itself (`init`, `simulate --print-config`), which must load as they are or name their placeholders.
 */
import { describe, expect, it } from "vitest";
import { parseConfig, readLogLevel } from "../../src/config.js";
import { PLACEHOLDERS } from "../../src/config-placeholders.js";
import { FIRST_RUN_LISTEN, mirrorNames, renderConfig } from "../../src/config-template.js";
import { UsageError } from "../../src/errors.js";
import { issuesOf } from "../helpers/config-issues.js";

const base = `api:
  base_url: https://api.example.com/api/v1
mirrors:
  - name: eng-wiki
    sync_config_id: 3f6c2a91-8d4e-4b7a-9c15-2e8f0d6b1a47
`;

describe("http.listen", () => {
  it("takes a bare port, number or string, as every interface on that port", () => {
    for (const listen of ["19464", '"19464"']) {
      const config = parseConfig("cfg.yaml", `${base}http:\n  listen: ${listen}\n`, {});
      expect(config.http).toMatchObject({ host: "0.0.0.0", port: 19464, listenFrom: "http.listen" });
    }
    expect(parseConfig("cfg.yaml", `${base}http:\n  listen: "[::1]:9464"\n`, {}).http).toMatchObject({
      host: "::1",
      port: 9464,
    });
  });

  it("refuses a port past 65535 or a value that is no address, saying both forms", () => {
    for (const listen of ["70000", "localhost:99999", "nowhere"]) {
      const [issue] = issuesOf(`${base}http:\n  listen: ${listen}\n`);
      expect(issue?.path).toBe("http.listen");
      expect(issue?.message).toMatch(/"host:port".*or a port/);
    }
  });

  it("is overridden by $SYNCMIRROR_HTTP_LISTEN, and a bad value names the variable", () => {
    const text = `${base}http:\n  listen: 0.0.0.0:9464\n`;
    const config = parseConfig("cfg.yaml", text, { SYNCMIRROR_HTTP_LISTEN: "127.0.0.1:9465" });
    expect(config.http).toMatchObject({
      host: "127.0.0.1",
      port: 9465,
      listenFrom: "$SYNCMIRROR_HTTP_LISTEN",
    });
    expect(parseConfig("cfg.yaml", text, { SYNCMIRROR_HTTP_LISTEN: "9466" }).http.port).toBe(9466);
    const [bad] = issuesOf(text, { SYNCMIRROR_HTTP_LISTEN: "port 9465" });
    expect(bad).toMatchObject({ path: "http.listen" });
    expect(bad?.message).toContain('$SYNCMIRROR_HTTP_LISTEN, which overrides it, is "port 9465"');
    expect(issuesOf(text, { SYNCMIRROR_HTTP_LISTEN: "" })[0]?.message).toMatch(
      /SYNCMIRROR_HTTP_LISTEN.*set but empty/,
    );
  });
});

describe("cron expressions", () => {
  it.each([
    ["0 25 * * *", /the hour field is "25", out of range: hours go from 0 to 23/],
    ["61 * * * *", /the minute field is "61", out of range: minutes go from 0 to 59/],
    ["0 3 32 * *", /the day-of-month field is "32", out of range: days of the month go from 1 to 31/],
    ["0 3 * 13 *", /the month field is "13", out of range/],
    ["0 3 * * 9", /the day-of-week field is "9", out of range/],
    ["*/15 * * *", /has 4 field\(s\): write 5 fields "minute hour day-of-month month day-of-week"/],
  ])("%s names what is wrong", (cron, message) => {
    const [issue] = issuesOf(`${base}    full_cron: "${cron}"\n`);
    expect(issue?.path).toBe("mirrors[0].full_cron");
    expect(issue?.message).toMatch(message);
  });
});

describe("LOG_LEVEL", () => {
  it("takes pino's level names in any case, default info, and refuses others naming the valid ones", () => {
    expect(readLogLevel({})).toBe("info");
    expect(readLogLevel({ LOG_LEVEL: "WARN" })).toBe("warn");
    for (const level of ["warning", "verbose"]) {
      expect(() => readLogLevel({ LOG_LEVEL: level })).toThrow(UsageError);
      expect(() => readLogLevel({ LOG_LEVEL: level })).toThrow(
        `LOG_LEVEL="${level}" is not a log level: set it to one of trace, debug, info, warn, error, fatal, silent`,
      );
    }
  });
});

describe("the configs syncmirror writes", () => {
  it("loads a filled template as written, with one mirror per config and the others commented out", () => {
    const names = mirrorNames(["All servers, all users", "Config 2", "Config 2", undefined]);
    expect(names).toEqual(["all-servers-all-users", "config-2", "config-2-2", "main"]);
    const text = renderConfig({
      header: ["written by a test"],
      baseUrl: "http://127.0.0.1:8080/api/v1",
      database: { urlEnv: "SYNCMIRROR_DATABASE_URL" },
      listen: FIRST_RUN_LISTEN,
      mirrors: [{ name: "a", syncConfigId: "id-a", remoteName: 'Quote "this"' }],
      otherMirrors: [{ name: "b", syncConfigId: "id-b" }],
      simulator: { everyMinute: true },
    });
    const config = parseConfig("cfg.yaml", text, { SYNCMIRROR_DATABASE_URL: "postgres://x@h/db" });
    expect(config.mirrors.map((m) => [m.name, m.syncConfigId, m.incrementalCron])).toEqual([
      ["a", "id-a", "* * * * *"],
    ]);
    expect(config.database).toMatchObject({ kind: "postgres", urlEnv: "SYNCMIRROR_DATABASE_URL" });
    expect(config.http).toMatchObject({ host: "127.0.0.1", port: 9464 });
    expect(text).toContain("# - name: b");
  });

  it("refuses the placeholder template until both values are replaced, naming each key", () => {
    const text = renderConfig({
      header: [],
      baseUrl: PLACEHOLDERS.baseUrl,
      database: { path: "data/mirror.db" },
      listen: FIRST_RUN_LISTEN,
      mirrors: [{ name: "main", syncConfigId: PLACEHOLDERS.syncConfigId }],
    });
    const issues = issuesOf(text);
    expect(issues.map((i) => i.path)).toEqual(["api.base_url", "mirrors[0].sync_config_id"]);
    expect(issues[0]?.message).toMatch(
      /REPLACE-WITH placeholder \(as syncmirror init and the shipped deploy config write them\): put the service's API base URL there/,
    );
    expect(issues[1]?.message).toMatch(/put the id of the sync config to mirror there/);
    const filled = text
      .replace(PLACEHOLDERS.baseUrl, "https://api.example.com/api/v1")
      .replace(PLACEHOLDERS.syncConfigId, "3f6c2a91");
    expect(parseConfig("cfg.yaml", filled, {}).mirrors[0]?.syncConfigId).toBe("3f6c2a91");
  });
});
