/**
 * `syncmirror demo` and `syncmirror simulate` as child processes: demo runs its passes and exits 0;
 * simulate serves a workspace with its printed base URL and token until SIGTERM. Neither reads the
 * configured store (demo uses a temporary SQLite file), so the postgres project leaves this file out.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
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

  it("explains its columns, the changes feed line and why one user finds nothing", async () => {
    const demo = spawnCli(["demo"], ENV);
    expect((await demo.exited).code, demo.stderr()).toBe(0);
    const out = demo.stdout().replace(/\n\s+/g, " ");
    expect(out).toContain("held: documents whose revocation the mass-delete guard holds back until approved");
    expect(out).toContain("skipped: user x server pairs the trigger did not run");
    expect(out).toContain("revoked: a user's access to a document removed");
    expect(out).toMatch(/changes feed: \d+ access, 1 delete, \d+ upsert \(one change per document per run/);
    expect(out).toContain("access = only who may see it changed");
    expect(out).toMatch(
      /\(the service shares ".+" with \S+@example\.com only, and search returns only what the searching user may see, so \S+@example\.com does not find it\)/,
    );
  });

  it("with no usable temporary directory: exit 2, one line naming TMPDIR, no stack, nothing left running", async () => {
    const demo = spawnCli(["demo"], { ...ENV, TMPDIR: "/nonexistent/syncmirror-tmp" });
    // A simulator left listening kept the process alive: the kill below makes that a signal exit.
    const killer = setTimeout(() => demo.child.kill("SIGKILL"), 10_000);
    const exit = await demo.exited;
    clearTimeout(killer);
    expect(exit, demo.stderr()).toEqual({ code: 2, signal: null });
    expect(demo.stderr().trim().split("\n")).toEqual([
      expect.stringMatching(/cannot create .*\/nonexistent\/syncmirror-tmp.*set TMPDIR/),
    ]);
    expect(demo.stdout()).toBe("");
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

describe("syncmirror simulate --configs N --print-config", () => {
  it("prints a ready config with N mirrors of N distinct sync configs, which sync as printed", async () => {
    const sim = spawnCli(["simulate", "--configs", "3", "--docs", "20", "--print-config"], ENV);
    const dir = mkdtempSync(join(tmpdir(), "syncmirror-print-config-"));
    try {
      // The config is one write: complete once the third mirror's id line has ended.
      const text = await until(
        () => /- name: config-3.*\n {4}sync_config_id: \S+\n/.test(sim.stdout()) && sim.stdout(),
        "the printed config",
      );
      const config = parse(text) as { mirrors: { name: string; sync_config_id: string }[] };
      const ids = config.mirrors.map((m) => m.sync_config_id);
      expect(config.mirrors.map((m) => m.name)).toEqual(["all-servers-all-users", "config-2", "config-3"]);
      expect(new Set(ids).size).toBe(3);
      const banner = [...text.matchAll(/^# sync_config_id: (\S+)$/gm)].map((m) => m[1]);
      expect(banner).toEqual(ids);
      const token = /^# token: (\S+)$/m.exec(text)?.[1];
      writeFileSync(join(dir, "printed.yaml"), text);
      const sync = spawnCli(
        ["sync", "--json", "--config", "printed.yaml"],
        { ...ENV, SYNCMIRROR_API_TOKEN: token },
        { cwd: dir },
      );
      expect((await sync.exited).code, sync.stderr()).toBe(0);
      const summary = JSON.parse(sync.stdout()) as { mirrors: { mirror: string; outcome: string }[] };
      expect(summary.mirrors.map((m) => [m.mirror, m.outcome])).toEqual([
        ["all-servers-all-users", "succeeded"],
        ["config-2", "succeeded"],
        ["config-3", "succeeded"],
      ]);
    } finally {
      await sim.stop("SIGTERM");
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
