import { describe, expect, it } from "vitest";
import type { SyncableSource, SyncConfig } from "../../src/api/schemas.js";
import { BadRequestError } from "../../src/errors.js";
import { declarationHash } from "../../src/sync-configs/declaration-hash.js";
import { diffSyncConfig } from "../../src/sync-configs/diff.js";
import { describeRefusal } from "../../src/sync-configs/refusal.js";
import { type DesiredSyncConfig, matchServer } from "../../src/sync-configs/resolve.js";

const source = (
  id: string,
  server_name: string,
  display_name: string,
  source_type = "notion",
): SyncableSource => ({
  server_instance_id: id,
  server_name,
  display_name,
  source_type,
});
const sources = [
  source("s1", "team-wiki", "Team Wiki"),
  source("s2", "GitHub", "GitHub", "github"),
  source("s3", "github-labs", "GitHub", "github"),
];

describe("matchServer: a declared server by id, server name or display name", () => {
  it("finds a server by its id, its server name or its display name, then ignoring case", () => {
    expect(matchServer("s1", sources, "project")).toEqual({ server: sources[0] });
    expect(matchServer("team-wiki", sources, "project")).toEqual({ server: sources[0] });
    expect(matchServer("Team Wiki", sources, "project")).toEqual({ server: sources[0] });
    expect(matchServer("TEAM WIKI", sources, "project")).toEqual({ server: sources[0] });
    expect(matchServer("github-labs", sources, "project")).toEqual({ server: sources[2] });
  });

  it("calls a name that fits several servers ambiguous, listing them", () => {
    const result = matchServer("GitHub", sources, 'project "Acme"');
    expect(result).toEqual({
      problem: expect.stringContaining('"GitHub" names 2 servers of project "Acme"'),
    });
    expect(JSON.stringify(result)).toContain("s2");
    expect(JSON.stringify(result)).toContain("s3");
    expect(JSON.stringify(result)).toContain("server_instance_id");
  });

  it("lists every candidate for an unknown name", () => {
    const result = matchServer("Gogle Drive", sources, 'project "Acme"');
    expect(result).toEqual({
      problem: expect.stringContaining('no syncable server of project "Acme" is named "Gogle Drive"'),
    });
    for (const s of sources) expect(JSON.stringify(result)).toContain(s.server_instance_id);
  });
});

const remote: SyncConfig = {
  id: "c1",
  name: "Wiki",
  instructions: "Collect the wiki.",
  all_users: false,
  user_emails: ["Ana@example.com", "bo@example.com"],
  servers: [
    { server_instance_id: "s1", server_name: "team-wiki", display_name: "Team Wiki", source_type: "notion" },
    { server_instance_id: "s2", server_name: "GitHub", display_name: "GitHub", source_type: "github" },
  ],
};
const want = (fields: Partial<Parameters<typeof diffSyncConfig>[0]["fields"]> = {}) => ({
  fields: {
    name: "Wiki",
    instructions: "Collect the wiki.",
    server_instance_ids: ["s2", "s1"],
    all_users: false,
    user_emails: ["bo@example.com", "ana@example.com"],
    ...fields,
  },
  serverLabels: new Map([
    ["s1", "Team Wiki"],
    ["s2", "GitHub"],
    ["s3", "Labs"],
  ]),
});

describe("diffSyncConfig: what applying would change", () => {
  it("sees nothing when only the order of servers or the case of emails differ", () => {
    expect(diffSyncConfig(want(), remote)).toEqual([]);
  });

  it("lists replaced fields, added and removed servers and users by the names people use", () => {
    const changes = diffSyncConfig(
      want({
        name: "Wiki 2",
        instructions: "Only the wiki.",
        server_instance_ids: ["s1", "s3"],
        user_emails: ["ana@example.com", "cy@example.com"],
      }),
      remote,
    );
    expect(changes).toEqual([
      { field: "name", from: "Wiki", to: "Wiki 2" },
      { field: "instructions", from: "Collect the wiki.", to: "Only the wiki." },
      { field: "servers", add: ["Labs"], remove: ["GitHub"] },
      { field: "users", add: ["cy@example.com"], remove: ["bo@example.com"] },
    ]);
  });

  it("turns a user list into all users as all_users plus the users it no longer lists", () => {
    expect(diffSyncConfig(want({ all_users: true, user_emails: [] }), remote)).toEqual([
      { field: "all_users", from: false, to: true },
      { field: "users", add: [], remove: ["Ana@example.com", "bo@example.com"] },
    ]);
  });
});

describe("declarationHash", () => {
  const d = {
    name: "Wiki",
    instructions: "x",
    servers: ["GitHub", "Team Wiki"],
    users: ["Ana@example.com", "bo@example.com"],
    allUsers: false,
    project: null,
    mirrorIndex: 0,
  };
  it("ignores what the service ignores (order, email case, where the mirror sits) and nothing else", () => {
    const same = {
      ...d,
      servers: ["Team Wiki", "GitHub"],
      users: ["bo@example.com", "ana@example.com"],
      mirrorIndex: 3,
    };
    expect(declarationHash(same)).toBe(declarationHash(d));
    expect(declarationHash({ ...d, instructions: "y" })).not.toBe(declarationHash(d));
    expect(declarationHash({ ...d, project: "Acme" })).not.toBe(declarationHash(d));
  });
});

describe("describeRefusal: a 400 naming a server, said by the file's key", () => {
  it("names the key and the file's own words of a server the file gave by id or by name", () => {
    const declared = {
      name: "Wiki",
      instructions: "Collect the wiki.",
      servers: ["Team Wiki", "s2"],
      users: [],
      allUsers: false,
      project: null,
      mirrorIndex: 1,
    };
    const desired = {
      mirror: { declared },
      serverLabels: new Map([
        ["s1", "Team Wiki"],
        ["s2", "GitHub (s2)"],
      ]),
    } as unknown as DesiredSyncConfig;
    const refused = (serverId: string) =>
      describeRefusal(
        new BadRequestError("bad", {
          method: "PUT",
          route: "/sync-configs/{id}",
          status: 400,
          detail: `server ${serverId} is not syncable`,
        }),
        desired,
      );
    expect(refused("s2")).toMatch(
      /^mirrors\[1\]\.sync_config\.servers\[1\] \(s2\): the service refused it \(400/,
    );
    expect(refused("s1")).toMatch(
      /^mirrors\[1\]\.sync_config\.servers\[0\] \(Team Wiki\): the service refused it/,
    );
  });
});
