import { describe, expect, it } from "vitest";
import { parseConfig, requireToken, resolveConfigPath } from "../../src/config.js";
import { ConfigError } from "../../src/errors.js";

const ID = "3f6c2a91-8d4e-4b7a-9c15-2e8f0d6b1a47";
const base = `api:
  base_url: https://api.example.com/api/v1
mirrors:
  - name: eng-wiki
    sync_config_id: ${ID}
`;

function issuesOf(text: string, env: Record<string, string> = {}): { path: string; message: string }[] {
  try {
    parseConfig("cfg.yaml", text, env);
  } catch (error) {
    if (error instanceof ConfigError) return [...error.issues];
    throw error;
  }
  throw new Error("expected a ConfigError");
}

describe("config", () => {
  it("fills SPEC defaults and lets a mirror override them", () => {
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
    expect(config.database.path).toBe("data/mirror.db");
    expect(config.http).toEqual({ host: "0.0.0.0", port: 9464 });
    expect(config.maxConcurrentMirrors).toBe(2);
    expect(requireToken(config)).toBe("t0ken-value");
    expect(Object.isFrozen(config)).toBe(true);
  });

  it("names the key path of wrong types, unknown keys and invalid crons", () => {
    const issues = issuesOf(
      `${base}    since_overlap_seconds: "soon"\n    full_cron: "every day"\n    colour: blue\n`,
    );
    const paths = issues.map((i) => i.path);
    expect(paths).toContain("mirrors[0].since_overlap_seconds");
    expect(paths).toContain("mirrors[0].full_cron");
    expect(issues.find((i) => i.path === "mirrors[0]")?.message).toMatch(/colour/);
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

  it("rejects any key holding the token from the environment", () => {
    const token = "env-token-0123456789";
    const issues = issuesOf(`${base}    sync_config_id_note: ${token}\n`, { SYNCMIRROR_API_TOKEN: token });
    expect(issues[0]?.path).toBe("mirrors[0].sync_config_id_note");
    expect(JSON.stringify(issues)).not.toContain(token);
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
  });

  it("resolves the config path from the flag, then the environment, then the default", () => {
    expect(resolveConfigPath("a.yaml", { SYNCMIRROR_CONFIG: "b.yaml" })).toBe("a.yaml");
    expect(resolveConfigPath(undefined, { SYNCMIRROR_CONFIG: "b.yaml" })).toBe("b.yaml");
    expect(resolveConfigPath(undefined, {})).toBe("config/syncmirror.yaml");
  });
});
