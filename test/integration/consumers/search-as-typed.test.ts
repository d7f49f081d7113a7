/**
 * `syncmirror search` as a person types it (either dialect, through the real CLI): terms with
 * punctuation are found as phrases, the user's email matches in any case, an unknown user gets a
 * hint instead of a bare "no results", a snippet that spans lines stays on its line, and a missing
 * --user or QUERY is named as the command line names it.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { configureConsumers } from "../../helpers/consumers.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { buildOnce } from "../daemon/setup.js";

let h: Harness | undefined;
beforeAll(buildOnce);
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const U1 = "user1@example.com";

async function mirrored(): Promise<{ h: Harness; keys: { notes: string; lines: string } }> {
  const harness = await createHarness({ sim: { docs: 5 } });
  h = harness;
  configureConsumers(harness, { search: true });
  const server = harness.sim.servers.find((s) => s.source_type === "notion");
  if (!server) throw new Error("no notion server");
  const add = (title: string, content: string) =>
    harness.sim.docs.get(
      harness.sim.docs.add({
        server_instance_id: server.server_instance_id,
        visibleTo: [U1],
        title,
        content,
      }),
    ).key;
  const keys = {
    notes: add("Compiler notes", "We don't ship C++ builds untested. Ask ops-lead@example.com for access."),
    lines: add("Runbook", "first line\nthen the\nwombat\nrestart\nlast line"),
  };
  const summary = await harness.sync();
  expect(summary.outcome, summary.message).toBe("succeeded");
  return { h: harness, keys };
}

const keysIn = (stdout: string) => stdout.match(/^ {2}(notion|github):\S+$/gm)?.map((k) => k.trim()) ?? [];

describe("search as typed", () => {
  it("finds don't, C++ and an email as phrases, for the user's email in any case", async () => {
    const { h, keys } = await mirrored();
    for (const query of ["don't", "C++", "ops-lead@example.com", "C++ untested"]) {
      const r = await h.cli(["search", "--user", "User1@Example.COM", query]);
      expect(r.code, `${query}: ${r.stderr}`).toBe(0);
      expect(keysIn(r.stdout), query).toEqual([keys.notes]);
    }
  });

  it("tells an unknown user from one who finds nothing, naming the users the mirror knows", async () => {
    const { h } = await mirrored();
    const stranger = await h.cli(["search", "--user", "nobody@example.com", "compiler"]);
    expect(stranger.code).toBe(0);
    expect(stranger.stdout).toBe(
      "no results: no user nobody@example.com in any mirror (users there include user1@example.com, user2@example.com, user3@example.com); search runs as a user the sync configs cover\n",
    );
    const json = await h.cli(["search", "--user", "nobody@example.com", "--json", "compiler"]);
    expect(JSON.parse(json.stdout)).toEqual({ results: [] });
    expect(json.stderr).toContain("no user nobody@example.com in any mirror");
    const known = await h.cli(["search", "--user", U1, "zzyzx"]);
    expect(known.stdout).toBe("no results\n");
  });

  it("keeps each hit on three lines when the snippet spans lines of the document", async () => {
    const { h, keys } = await mirrored();
    const r = await h.cli(["search", "--user", U1, "wombat"]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(/^ {2}.*«wombat»/);
    expect(lines[2]).toBe(`  ${keys.lines}`);
  });

  it("takes the query as --q too, the name GET /v1/search gives it", async () => {
    const { h, keys } = await mirrored();
    const r = await h.cli(["search", "--user", U1, "--q", "C++ untested", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).results.map((x: { key: string }) => x.key)).toEqual([keys.notes]);
    const both = await h.cli(["search", "--user", U1, "--q", "C++", "untested"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/^syncmirror: QUERY: give it once, either as --q QUERY or after the options/);
  });

  it("names a missing --user or QUERY as the command line does, exit 2", async () => {
    const { h } = await mirrored();
    const noUser = await h.cli(["search", "compiler"]);
    expect(noUser.code).toBe(2);
    expect(noUser.stderr).toBe("syncmirror: --user: is required: search always runs as one user\n");
    const noQuery = await h.cli(["search", "--user", U1]);
    expect(noQuery.code).toBe(2);
    expect(noQuery.stderr).toBe("syncmirror: QUERY: is required\n");
    // Nothing to search for is a refused query, exit 2 as an unclosed quote is, with or without --json.
    for (const args of [["!!!"], ["--json", "!!!"]]) {
      const empty = await h.cli(["search", "--user", U1, ...args]);
      expect(empty.code, args.join(" ")).toBe(2);
      expect(empty.stdout, args.join(" ")).toBe("");
      expect(empty.stderr).toBe(
        'syncmirror: the search query is not valid: "!!!" holds no letter or digit to search for\n',
      );
    }
  });

  it("says in one line that search is off, exit 2, whatever the query or the index left behind", async () => {
    const { h } = await mirrored();
    configureConsumers(h, { search: false });
    for (const query of ["compiler", "C++", '"unclosed']) {
      const r = await h.cli(["search", "--user", U1, "--json", query]);
      expect(r.code, query).toBe(2);
      expect(r.stdout, query).toBe("");
      expect(r.stderr, query).toBe(
        `syncmirror: search is not enabled: set search.enabled: true in ${h.configPath}, then run syncmirror reindex\n`,
      );
    }
  });
});
