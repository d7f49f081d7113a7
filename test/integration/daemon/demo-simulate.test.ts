/**
 * `syncmirror demo` and `syncmirror simulate` as child processes: demo runs its passes and exits 0;
 * simulate serves a workspace with its printed base URL and token until SIGTERM. Neither reads the
 * configured store (demo uses a temporary SQLite file), so the postgres project leaves this file out.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { spawnCli, until } from "../../helpers/daemon.js";
import { buildOnce } from "./setup.js";

beforeAll(buildOnce);

const ENV = { ...process.env, LOG_LEVEL: "warn" };

describe("syncmirror demo", () => {
  it("mirrors the sample workspace, prints each pass and exits 0", async () => {
    const demo = spawnCli(["demo"], ENV);
    const exit = await demo.exited;
    expect(exit, demo.stderr()).toEqual({ code: 0, signal: null });
    const out = demo.stdout();
    expect(out).toMatch(
      /simulated service at http:\/\/127\.0\.0\.1:\d+\/api\/v1: 3 users, 2 servers, 60 documents/,
    );
    for (const pass of [
      "== 1. first pass",
      "== 2. incremental pass",
      "== 3. incremental pass",
      "== 4. full pass",
    ])
      expect(out).toContain(pass);
    expect(out).toMatch(/since sent: \d{4}-\d\d-\d\dT/);
    expect(out).toMatch(/resources: \d+ live, 1 tombstone\(s\)/);
    expect(out).toMatch(/changes feed: .*\d+ delete/);
    const [, searches = ""] = out.split(/== 5\. search .*, as two users\n/);
    const sections = searches.split(/^(?=\S+@\S+: )/m).filter((x) => x.trim() !== "");
    expect(sections).toHaveLength(2);
    const keysOf = (section: string) => section.match(/ (?:notion|github):\S+/g) ?? [];
    expect(keysOf(sections[0] as string).length).toBeGreaterThan(0);
    expect(keysOf(sections[0] as string)).not.toEqual(keysOf(sections[1] as string));
  });
});

describe("syncmirror simulate", () => {
  it("prints its base URL and token, serves the sync configs with that token, stops on SIGTERM", async () => {
    const sim = spawnCli(["simulate", "--docs", "1000", "--seed", "5"], ENV);
    try {
      const out = await until(
        () => (/token: .*\n/.test(sim.stdout()) ? sim.stdout() : undefined),
        "the token line",
      );
      await until(() => sim.stdout().includes("sync_config_id: "), "the sync config line");
      const baseUrl = /base_url: (\S+)/.exec(out)?.[1];
      const token = /token: (\S+)/.exec(out)?.[1];
      const configId = /sync_config_id: (\S+)/.exec(sim.stdout())?.[1];
      expect(baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/);
      expect(sim.stdout()).toContain("docs: 1000");

      const url = `${baseUrl}/sync-configs/${configId}`;
      const denied = await fetch(url);
      expect(denied.status).toBe(401);
      const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { id?: string; servers?: unknown[] };
      expect(body.id).toBe(configId);
      expect(body.servers?.length).toBeGreaterThan(0);

      const stopped = await sim.stop("SIGTERM");
      expect(stopped).toMatchObject({ code: 0, signal: null });
      expect(stopped.ms).toBeLessThan(10_000);
      await expect(fetch(url, { headers: { authorization: `Bearer ${token}` } })).rejects.toThrow();
    } finally {
      await sim.stop("SIGKILL");
    }
  });
});
