/**
 * `forget` killed with SIGKILL (the seam SYNCMIRROR_CRASH_AT=<point>:<n>, see src/runtime.ts) after
 * a pair's revocation committed, and after every pair's but before the mirror's state went: what is
 * left is a retired mirror that `status` and `check` still show, with the access rows of the pairs
 * not yet revoked, and a second `forget` finishes it into the database of a twin that forgot it in
 * one run (docs/operations.md#removing-a-mirror). The feed may hold more: the second run records
 * each key it revokes anew, also one the first run already recorded, and a consumer reading it ends
 * where the twin's leaves it.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { RetiredMirrorStatus } from "../../../src/sync/status-report.js";
import { type DbSnapshot, databaseProblems, snapshot, snapshotDiff } from "../../helpers/db-snapshot.js";
import { changes, lastSeq } from "../../helpers/mirror-db.js";
import type { Harness } from "../../helpers/mirror-harness.js";
import { createTwins, type Twins } from "../../helpers/twins.js";
import { buildOnce, editConfig } from "../daemon/setup.js";

let twins: Twins | undefined;
beforeAll(buildOnce);
afterEach(async () => {
  await twins?.close();
  twins = undefined;
});

const [U1, U2, U3] = ["user1@example.com", "user2@example.com", "user3@example.com"];

interface AccessRow {
  user_email: string;
  key: string;
}

const accessOf = (h: Harness, mirror: string) =>
  h.query<AccessRow>(
    "SELECT user_email, key FROM resource_access WHERE mirror = ? ORDER BY user_email, key",
    mirror,
  );

async function retiredMirrors(h: Harness): Promise<RetiredMirrorStatus[]> {
  const status = await h.cli(["status", "--json"]);
  expect(status.code, status.stderr).toBe(0);
  return JSON.parse(status.stdout).retired_mirrors;
}

async function retiredLines(h: Harness): Promise<string[]> {
  return (await h.cli(["check"])).stdout.split("\n").filter((l) => l.includes("retired mirror"));
}

/**
 * `main` grants U1, `other` U2 and U3 on one server (a pair per user), both synced; then `other`
 * is taken out of the config.
 */
async function retireOther(h: Harness): Promise<void> {
  const server = h.sim.servers[0]?.server_instance_id as string;
  const main = h.sim.configs.create({ name: "main", userEmails: [U1] });
  const other = h.sim.configs.create({ name: "other", userEmails: [U2, U3], serverIds: [server] });
  editConfig(h, (config) => {
    config.mirrors = [
      { name: "main", sync_config_id: main },
      { name: "other", sync_config_id: other },
    ];
  });
  const synced = await h.cli(["sync"]);
  expect(synced.code, synced.stderr).toBe(0);
  editConfig(h, (config) => {
    config.mirrors = (config.mirrors as { name: string }[]).filter((m) => m.name !== "other");
  });
}

const keysOf = (rows: readonly AccessRow[]) => new Set(rows.map((r) => r.key));
const sorted = (keys: Iterable<string>) => [...keys].sort();

/** Each key's latest change: what a consumer reading the whole feed acts on last. */
const lastOps = (h: Harness) => Object.fromEntries(changes(h).map((c) => [c.key, c.op]));

const withoutFeed = (s: DbSnapshot): DbSnapshot => ({ ...s, changes: [] });

describe("forget killed part way, then run again", () => {
  it.each(["mid-forget:1", "before-forget-state:1"])(
    "ends as a forget that was never killed (%s)",
    async (crashAt) => {
      twins = await createTwins({ sim: { docs: 40 } });
      const { clean, hurt } = twins;
      await retireOther(clean);
      await retireOther(hurt);

      const granted = accessOf(hurt, "other");
      const mainKeys = keysOf(accessOf(hurt, "main"));
      const byUser = (user: string) => granted.filter((r) => r.user_email === user);
      const [u2Keys, u3Keys] = [keysOf(byUser(U2)), keysOf(byUser(U3))];
      // What the rerun has to get right: a key `main` still grants (an `access` change), one only
      // `other` grants through both its users (revoked by two pairs, one `delete` in the end), and
      // one only a single user of it sees.
      expect([...u2Keys].some((k) => u3Keys.has(k) && mainKeys.has(k))).toBe(true);
      expect([...u2Keys].some((k) => u3Keys.has(k) && !mainKeys.has(k))).toBe(true);
      expect([...u2Keys, ...u3Keys].some((k) => !(u2Keys.has(k) && u3Keys.has(k)) && !mainKeys.has(k))).toBe(
        true,
      );
      const allKeys = keysOf(granted).size;
      expect(await retiredMirrors(hurt)).toEqual([{ mirror: "other", users: 2, keys: allKeys }]);

      const reference = await clean.cli(["forget", "--mirror", "other"]);
      expect(reference.code, reference.stderr).toBe(0);

      const beforeForget = lastSeq(hurt);
      const crashed = await hurt.cli(["forget", "--mirror", "other"], { SYNCMIRROR_CRASH_AT: crashAt });
      expect(crashed.code, `expected SIGKILL at ${crashAt}; stderr: ${crashed.stderr}`).toBeNull();
      expect(databaseProblems(hurt)).toEqual([]);

      const left = accessOf(hurt, "other");
      const afterCrash = lastSeq(hurt);
      const revokedFirst = granted.filter((r) => !left.some((l) => l.user_email === r.user_email));
      expect(sorted(changes(hurt, beforeForget).map((c) => c.key))).toEqual(sorted(keysOf(revokedFirst)));
      if (crashAt.startsWith("mid-forget")) {
        // One pair revoked whole, the other untouched.
        const kept = left[0]?.user_email as string;
        expect(left).toEqual(byUser(kept));
        expect(kept === U2 || kept === U3).toBe(true);
        const keys = keysOf(left).size;
        expect(await retiredMirrors(hurt)).toEqual([{ mirror: "other", users: 1, keys }]);
        expect(await retiredLines(hurt)).toEqual([
          `PROBLEM retired mirror other (not in the config) still grants 1 user(s) access to ${keys} key(s); run syncmirror forget --mirror other to revoke it, or put it back in the config`,
        ]);
      } else {
        expect(left).toEqual([]);
        expect(await retiredMirrors(hurt)).toEqual([{ mirror: "other", users: 0, keys: 0 }]);
        expect(await retiredLines(hurt)).toEqual([
          "retired mirror other (not in the config) grants no access; its state is still kept: run syncmirror forget --mirror other to delete it",
        ]);
      }

      const resumed = await hurt.cli(["forget", "--mirror", "other"]);
      expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);

      expect(databaseProblems(hurt)).toEqual([]);
      expect(await retiredMirrors(hurt)).toEqual([]);
      expect(await retiredLines(hurt)).toEqual([]);
      expect(snapshotDiff(withoutFeed(snapshot(hurt)), withoutFeed(snapshot(clean)))).toEqual([]);
      expect(lastOps(hurt)).toEqual(lastOps(clean));
      // Once each, for the keys of the pairs the first run left.
      expect(sorted(changes(hurt, afterCrash).map((c) => c.key))).toEqual(sorted(keysOf(left)));
      if (left.length === 0) expect(snapshot(hurt).changes).toEqual(snapshot(clean).changes);
    },
  );
});
