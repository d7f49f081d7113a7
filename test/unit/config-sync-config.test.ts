import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config.js";
import { issuesOf } from "../helpers/config-issues.js";

const head = "api:\n  base_url: https://api.example.com/api/v1\n";
const declared = `  - name: sales
    sync_config:
      name: Sales drive
      instructions: Collect the team's proposals.
      servers: [Google Drive]
      users: [ana@example.com, bo@example.com]
`;

describe("config: declared sync configs", () => {
  it("reads a declaration; manage_sync_configs is off by default", () => {
    const config = parseConfig("cfg.yaml", `${head}mirrors:\n${declared}`, {});
    expect(config.manageSyncConfigs).toBe(false);
    expect(config.mirrors[0]).toMatchObject({
      name: "sales",
      syncConfigId: null,
      declared: {
        name: "Sales drive",
        instructions: "Collect the team's proposals.",
        servers: ["Google Drive"],
        users: ["ana@example.com", "bo@example.com"],
        allUsers: false,
        project: null,
        mirrorIndex: 0,
      },
    });
    const managed = parseConfig("cfg.yaml", `${head}manage_sync_configs: true\nmirrors:\n${declared}`, {});
    expect(managed.manageSyncConfigs).toBe(true);
  });

  it("takes all_users: true instead of a user list, and a project by name", () => {
    const text = `${head}mirrors:\n  - name: all\n    sync_config:\n      name: All\n      instructions: x\n      servers: [GitHub]\n      all_users: true\n      project: Acme\n`;
    expect(parseConfig("cfg.yaml", text, {}).mirrors[0]?.declared).toMatchObject({
      users: null,
      allUsers: true,
      project: "Acme",
    });
  });

  it("takes all_users: false beside a user list (the service's own shape), and only there", () => {
    const withFalse = `${head}mirrors:\n${declared}      all_users: false\n`;
    expect(parseConfig("cfg.yaml", withFalse, {}).mirrors[0]?.declared).toMatchObject({
      users: ["ana@example.com", "bo@example.com"],
      allUsers: false,
    });
    const noUsers = withFalse.replace("      users: [ana@example.com, bo@example.com]\n", "");
    expect(issuesOf(noUsers)).toEqual([
      { path: "mirrors[0].sync_config", message: expect.stringContaining("all_users: true") },
    ]);
  });

  it("needs exactly one of sync_config_id and sync_config, naming the mirror", () => {
    const both = `${head}mirrors:\n${declared}    sync_config_id: 3f6c\n`;
    expect(issuesOf(both)).toEqual([{ path: "mirrors[0]", message: expect.stringContaining("exactly one") }]);
    const neither = `${head}mirrors:\n  - name: bare\n`;
    expect(issuesOf(neither)).toEqual([
      { path: "mirrors[0]", message: expect.stringContaining("exactly one") },
    ]);
  });

  it("names the key of each mistake in a declaration", () => {
    const text = `${head}mirrors:
  - name: bad
    sync_config:
      name: ""
      instructions: x
      servers: [a, b, c, d, e, f, g, h, i, j, k]
      users: [ana@example.com, not-an-email, ANA@example.com]
      all_users: true
      token: nope
`;
    const issues = issuesOf(text);
    expect(issues.map((i) => i.path)).toEqual(["mirrors[0].sync_config.token"]);
    const withoutToken = issuesOf(text.replace("      token: nope\n", ""));
    expect(withoutToken.map((i) => i.path)).toEqual([
      "mirrors[0].sync_config.name",
      "mirrors[0].sync_config.servers",
      "mirrors[0].sync_config.users[1]",
    ]);
    // What spans fields is checked once each field is right.
    const crossField = issuesOf(
      text
        .replace("      token: nope\n", "")
        .replace('name: ""', "name: Wiki")
        .replace("[a, b, c, d, e, f, g, h, i, j, k]", "[a]")
        .replace("not-an-email", "bo@example.com"),
    );
    expect(crossField).toEqual([
      { path: "mirrors[0].sync_config", message: expect.stringContaining("all_users") },
      { path: "mirrors[0].sync_config.users[2]", message: "repeats users[0]" },
    ]);
  });

  it("refuses two mirrors declaring one name in one project, as it refuses two naming one id", () => {
    const twice = `${head}mirrors:\n${declared}${declared.replace("name: sales", "name: sales2")}`;
    expect(issuesOf(twice)).toEqual([
      {
        path: "mirrors[1].sync_config.name",
        message: expect.stringContaining(
          'mirrors "sales" and "sales2" both mirror the sync config named "Sales drive"',
        ),
      },
    ]);
  });

  it("refuses the API token pasted into a declaration, naming the key and never the value", () => {
    const env = { SYNCMIRROR_API_TOKEN: "api-secret-token-value" };
    const text = `${head}mirrors:\n${declared.replace("Collect the team's proposals.", "Use api-secret-token-value")}`;
    const issues = issuesOf(text, env);
    expect(issues.map((i) => i.path)).toEqual(["mirrors[0].sync_config.instructions"]);
    expect(JSON.stringify(issues)).not.toContain("api-secret-token-value");
  });
});
