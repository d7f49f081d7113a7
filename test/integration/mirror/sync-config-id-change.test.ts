/**
 * docs/reference/sync-semantics.md#a-changed-sync_config_id: a mirror whose `sync_config_id` is
 * edited to name another upstream config keeps its name and its keys, but the watermarks and the
 * trigger in flight belong to the old config. Through the real CLI on the suite's store.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { writeMirrors } from "../../helpers/declared-configs.js";
import { sinceSent } from "../../helpers/mirror-db.js";
import { createHarness, expectedKeys, type Harness, visibleKeys } from "../../helpers/mirror-harness.js";
import { buildOnce } from "../daemon/setup.js";

beforeAll(buildOnce);

/** `main` on a config of the wiki alone; the simulator's default config sees the wiki and GitHub. */
async function wikiOnlyHarness(): Promise<{ h: Harness; wikiOnly: string; both: string }> {
  const h = await createHarness({ sim: { docs: 40 } });
  const wiki = h.sim.servers.find((s) => s.source_type === "notion")?.server_instance_id ?? "";
  const wikiOnly = h.sim.configs.create({ name: "Wiki only", serverIds: [wiki] });
  writeMirrors(h, { main: wikiOnly });
  return { h, wikiOnly, both: h.sim.syncConfigId };
}

async function syncJson(h: Harness, env: Record<string, string> = {}) {
  const synced = await h.cli(["sync", "--json"], env);
  return { code: synced.code, mirror: JSON.parse(synced.stdout).mirrors[0] };
}

async function statusOfMain(h: Harness): Promise<Record<string, unknown>> {
  const status = await h.cli(["status", "--json"]);
  expect(status.code).toBe(0);
  return JSON.parse(status.stdout).mirrors[0];
}

describe("a mirror whose sync_config_id changes", () => {
  it("runs a full snapshot next, sending no since from the old config's runs, then incrementals again", async () => {
    const { h, both } = await wikiOnlyHarness();
    try {
      expect((await syncJson(h)).mirror).toMatchObject({ mode: "full", outcome: "succeeded" });
      expect(await statusOfMain(h)).toMatchObject({ next_mode: "incremental" });

      writeMirrors(h, { main: both });
      expect(await statusOfMain(h)).toMatchObject({ next_mode: "full", next_since: null });
      const changed = await syncJson(h);
      expect(changed).toMatchObject({ code: 0, mirror: { mode: "full", since: null, outcome: "succeeded" } });
      expect(sinceSent(h, changed.mirror.trigger_id)).toEqual(h.sim.users.map(() => null));
      // GitHub's documents, which only the new config sees, are all there without a `--full`.
      for (const user of h.sim.users) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));

      expect(await statusOfMain(h)).toMatchObject({ next_mode: "incremental" });
      expect((await syncJson(h)).mirror).toMatchObject({ mode: "incremental", outcome: "succeeded" });
    } finally {
      await h.close();
    }
  });

  it("revokes at that full the keys of servers the new config leaves out, as removed pairs, not held by the guard", async () => {
    const { h, wikiOnly, both } = await wikiOnlyHarness();
    try {
      writeMirrors(h, { main: both });
      await syncJson(h);
      const github = h.sim.servers.find((s) => s.source_type === "github")?.server_instance_id;
      const onGithub = () =>
        h.query<{ n: number }>(
          "SELECT count(*) AS n FROM resource_access WHERE mirror = 'main' AND server_instance_id = ?",
          github,
        )[0]?.n;
      expect(Number(onGithub())).toBeGreaterThan(10);

      writeMirrors(h, { main: wikiOnly });
      const changed = await syncJson(h);
      expect(changed).toMatchObject({ code: 0, mirror: { mode: "full", since: null, outcome: "succeeded" } });
      expect(Number(onGithub())).toBe(0);
    } finally {
      await h.close();
    }
  });

  it("stays owed a full until one succeeds: a pass that failed before it does not pay it", async () => {
    const { h, both } = await wikiOnlyHarness();
    try {
      await syncJson(h);
      writeMirrors(h, { main: both });
      h.sim.faults.inject("POST /sync-task", { kind: "401" });
      expect((await syncJson(h)).mirror).toMatchObject({ mode: "full", outcome: "failed" });
      h.sim.faults.clear();
      const next = await syncJson(h);
      expect(next.mirror).toMatchObject({ mode: "full", since: null, outcome: "succeeded" });
    } finally {
      await h.close();
    }
  });

  it.each([
    ["after-intent:1", "its POST not yet answered"],
    ["after-trigger-post:1", "its runs started"],
  ])(
    "abandons an incremental of the old config left in flight (%s: %s), then runs the full",
    async (crashAt) => {
      const { h, both } = await wikiOnlyHarness();
      try {
        await syncJson(h);
        expect((await h.cli(["sync"], { SYNCMIRROR_CRASH_AT: crashAt })).code).toBeNull();
        const oldRuns = new Set(h.sim.runs.list().map((r) => r.sync_id));

        writeMirrors(h, { main: both });
        const changed = await syncJson(h);
        expect(changed).toMatchObject({
          code: 0,
          mirror: {
            mode: "full",
            since: null,
            outcome: "succeeded",
            finished_first: { mode: "incremental", outcome: "failed" },
          },
        });
        expect(changed.mirror.finished_first.message).toContain(`abandoned`);
        // Every run sent to the new config is the full's: none carries the old config's since.
        const sent = h.sim.runs.list().filter((r) => !oldRuns.has(r.sync_id));
        expect(sent.map((r) => [r.sync_config_id, r.since])).toEqual(h.sim.users.map(() => [both, null]));
        for (const user of h.sim.users) expect(visibleKeys(h, user)).toEqual(expectedKeys(h.sim, user));
      } finally {
        await h.close();
      }
    },
  );
});
