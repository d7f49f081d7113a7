/**
 * docs/operations.md#removing-a-mirror, through the built CLI on the suite's store: a mirror removed
 * from the config still grants its access until `forget` revokes it; `status` lists it and `check`
 * says what to do; `forget` revokes as a sweep does (an `access` change for a key another mirror
 * still grants, a tombstone and a `delete` for one only it granted), deletes its state, keeps its
 * history and leaves the other mirror alone; a configured or unknown name is refused.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config.js";
import { silentLogger } from "../../../src/log.js";
import { openStore } from "../../../src/store/open-store.js";
import type { ForgetJson } from "../../../src/sync/forget.js";
import type { RetiredMirrorStatus } from "../../../src/sync/status-report.js";
import { startDaemon, until } from "../../helpers/daemon.js";
import { changes, lastSeq, pickDoc, resourceRow, TOMBSTONE } from "../../helpers/mirror-db.js";
import { createHarness, type Harness } from "../../helpers/mirror-harness.js";
import { buildOnce, editConfig, NEVER, setCrons } from "../daemon/setup.js";

let h: Harness;
beforeAll(buildOnce);
afterEach(async () => {
  await h?.close();
});

const [U1, U2] = ["user1@example.com", "user2@example.com"];

const accessOf = (mirror: string) =>
  h.query<{ user_email: string; key: string }>(
    "SELECT user_email, key FROM resource_access WHERE mirror = ? ORDER BY user_email, key",
    mirror,
  );
const rowsOf = (table: string, mirror: string) =>
  h.query<{ n: number }>(`SELECT count(*) AS n FROM ${table} WHERE mirror = ?`, mirror)[0]?.n;

/** Mirror "main" of U1's access and "other" of U2's, each synced once. */
async function syncTwoMirrors(): Promise<void> {
  const main = h.sim.configs.create({ name: "main", userEmails: [U1] });
  const other = h.sim.configs.create({ name: "other", userEmails: [U2] });
  editConfig(h, (config) => {
    config.mirrors = [
      { name: "main", sync_config_id: main },
      { name: "other", sync_config_id: other },
    ];
  });
  expect((await h.cli(["sync"])).code).toBe(0);
}

describe("forget", () => {
  it("revokes what a mirror removed from the config still grants, after status and check show it", async () => {
    h = await createHarness({ sim: { docs: 40 } });
    await syncTwoMirrors();
    const shared = pickDoc(h, (d) => d.visibleTo.includes(U1) && d.visibleTo.includes(U2));
    const onlyOther = pickDoc(h, (d) => d.visibleTo.includes(U2) && !d.visibleTo.includes(U1));
    const mainAccess = accessOf("main");
    const otherKeys = new Set(accessOf("other").map((r) => r.key));
    expect(otherKeys).toContain(shared.key);
    expect(otherKeys).toContain(onlyOther.key);

    editConfig(h, (config) => {
      config.mirrors = (config.mirrors as { name: string }[]).filter((m) => m.name !== "other");
    });
    const retired: RetiredMirrorStatus[] = [{ mirror: "other", users: 1, keys: otherKeys.size }];
    const status = await h.cli(["status", "--json"]);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout).retired_mirrors).toEqual(retired);
    expect((await h.cli(["status"])).stdout).toContain(
      `retired mirrors (in the database, not in the config):\n  other: still grants 1 user(s) access to ${otherKeys.size} key(s); run syncmirror forget --mirror other`,
    );
    // A daemon started on the edited config has no pass for it: its /status lists it, its log says so once.
    setCrons(h, { incremental_cron: NEVER, full_cron: NEVER });
    const daemon = await startDaemon(h);
    try {
      // Ready comes after the start-up warnings; /status may answer before them.
      await until(async () => (await daemon.get("/readyz")).status === 200, "/readyz");
      const served = JSON.parse((await daemon.get("/status")).body);
      expect(served.retired_mirrors).toEqual(retired);
      expect(daemon.logs().filter((l) => l.mirror === "other")).toMatchObject([
        {
          level: 40,
          users: 1,
          keys: otherKeys.size,
          msg: expect.stringMatching(/^retired mirror other/),
        },
      ]);
    } finally {
      await daemon.stop();
    }
    const check = await h.cli(["check"]);
    expect(check.code).toBe(1);
    expect(check.stdout.split("\n").filter((l) => l.includes("retired mirror"))).toEqual([
      `PROBLEM retired mirror other (not in the config) still grants 1 user(s) access to ${otherKeys.size} key(s); run syncmirror forget --mirror other to revoke it, or put it back in the config`,
    ]);

    const configured = await h.cli(["forget", "--mirror", "main"]);
    expect(configured.code).toBe(2);
    expect(configured.stderr).toMatch(
      /^syncmirror: mirror main is in the config: remove it from the config first/,
    );
    expect(accessOf("main")).toEqual(mainAccess);

    // A process whose config still names the mirror runs its pass: forget waits for it, revoking nothing.
    const store = await openStore(loadConfig(h.configPath, h.env), { lock: false, log: silentLogger() });
    try {
      const holder = { id: "other-replica", name: "elsewhere:7", scope: null };
      const lease = await store.leases.acquire("other", holder, 60);
      const busy = await h.cli(["forget", "--mirror", "other"]);
      expect(busy.code).toBe(1);
      expect(busy.stderr).toMatch(
        /^syncmirror: mirror other is held by another syncmirror process \(elsewhere:7\)/,
      );
      expect(accessOf("other")).toHaveLength(otherKeys.size);
      await store.leases.release({ mirror: "other", holder: holder.id, epoch: lease?.epoch ?? -1 });
    } finally {
      await store.close();
    }

    const before = lastSeq(h);
    const forgot = await h.cli(["forget", "--mirror", "other", "--json"]);
    expect(forgot.code, forgot.stderr).toBe(0);
    const deleted = [...otherKeys].filter((key) => !mainAccess.some((r) => r.key === key));
    expect(JSON.parse(forgot.stdout) as ForgetJson).toMatchObject({
      mirror: "other",
      users: 1,
      keys: otherKeys.size,
      access_revoked: otherKeys.size,
      resources_deleted: deleted.length,
    });
    expect(accessOf("other")).toEqual([]);
    expect(accessOf("main"), "the other mirror is untouched").toEqual(mainAccess);
    const recorded = changes(h, before);
    expect(recorded.filter((c) => c.key === shared.key).map((c) => c.op)).toEqual(["access"]);
    expect(recorded.filter((c) => c.key === onlyOther.key).map((c) => c.op)).toEqual(["delete"]);
    expect(
      recorded
        .filter((c) => c.op === "delete")
        .map((c) => c.key)
        .sort(),
    ).toEqual(deleted.sort());
    expect(resourceRow(h, onlyOther.key)).toMatchObject(TOMBSTONE);
    expect(resourceRow(h, shared.key)?.deleted_at).toBeNull();
    expect([rowsOf("mirror_state", "other"), rowsOf("pairs", "other")]).toEqual([0, 0]);
    expect(rowsOf("triggers", "other"), "its history stays").toBe(1);
    expect(JSON.parse((await h.cli(["status", "--json"])).stdout).retired_mirrors).toEqual([]);

    const again = await h.cli(["forget", "--mirror", "other"]);
    expect(again.code).toBe(2);
    expect(again.stderr).toBe('syncmirror: the database knows no mirror named "other": nothing to forget\n');
    expect((await h.cli(["check"])).stdout).not.toContain("retired mirror");
  });

  it("lets a consumer that reads the feed of the removed mirror alone hear what forget revoked; a name the database never knew is still refused", async () => {
    h = await createHarness({ sim: { docs: 30 } });
    await syncTwoMirrors();
    const feedOf = async (after: number) => {
      const r = await h.cli(["changes", "--mirror", "other", "--after", String(after), "--limit", "1000"]);
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as {
        changes: { key: string; op: string; access: { mirror: string }[] }[];
        next_after: number;
      };
    };
    // The consumer indexes what "other" grants and keeps its position.
    const seen = await feedOf(0);
    const otherKeys = new Set(accessOf("other").map((r) => r.key));
    expect(new Set(seen.changes.map((c) => c.key))).toEqual(otherKeys);

    editConfig(h, (config) => {
      config.mirrors = (config.mirrors as { name: string }[]).filter((m) => m.name !== "other");
    });
    expect((await feedOf(seen.next_after)).changes).toEqual([]);
    expect((await h.cli(["forget", "--mirror", "other"])).code).toBe(0);

    // Reading on from its position, it hears of every key it indexed, none still granted by "other".
    const after = await feedOf(seen.next_after);
    expect(new Set(after.changes.map((c) => c.key))).toEqual(otherKeys);
    expect(after.changes.every((c) => c.op !== "upsert" && c.access.length === 0)).toBe(true);
    const typo = await h.cli(["changes", "--mirror", "othr"]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('--mirror: no mirror named "othr" in the config (known: main)');
  });
});
