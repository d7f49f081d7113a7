/**
 * The public `resource_access` table: which user may see which key through which mirror.
 */
import { and, count, eq, gte, lt, sql } from "drizzle-orm";
import { p } from "../placeholders.js";
import type { AccessRepo } from "../store.js";
import type { PairRef, SeenRow } from "../types.js";
import type { Db } from "./open.js";
import { resourceAccess } from "./schema.js";
import type { Sync } from "./sync-repo.js";

export function createAccessRepo(db: Db): Sync<AccessRepo> {
  const pairWhere = and(
    eq(resourceAccess.mirror, p("mirror")),
    eq(resourceAccess.userEmail, p("userEmail")),
    eq(resourceAccess.serverInstanceId, p("serverInstanceId")),
  );

  // `see` runs for every exported row: plain better-sqlite3 statements with positional
  // parameters, because drizzle's per-call placeholder mapping cost more than the SQLite work.
  const sqlite = db.$client;
  const refresh = sqlite.prepare<[string, string, string, string, string]>(
    `UPDATE resource_access SET source = ?, last_seen_at = max(last_seen_at, ?), missed_full_count = 0
     WHERE mirror = ? AND user_email = ? AND key = ?`,
  );
  const insertNew = sqlite.prepare<[string, string, string, string, string, string]>(
    `INSERT INTO resource_access (mirror, user_email, key, server_instance_id, source, last_seen_at, missed_full_count)
     VALUES (?, ?, ?, ?, ?, ?, 0) ON CONFLICT DO NOTHING`,
  );

  // The mirror's keys, minus those whose resource is a tombstone (every key with access has a
  // resources row). Joining each access row to its resource instead reads a million wide rows at
  // a million rows (4 s); this reads two indexes (0.2 s). INDEXED BY because, without table
  // statistics, the planner prefers the primary key and a temporary B-tree for the DISTINCT.
  const liveKeys = sqlite.prepare<[string, string], { n: number }>(
    `SELECT (SELECT count(DISTINCT key) FROM resource_access INDEXED BY resource_access_key_mirror WHERE mirror = ?)
          - (SELECT count(DISTINCT a.key) FROM resources r INDEXED BY resources_deleted_at
               CROSS JOIN resource_access a ON a.key = r.key
              WHERE r.deleted_at IS NOT NULL AND a.mirror = ?) AS n`,
  );

  // Each pair's rows from `since` on, through the index the sweep reads: an incremental pass reads
  // only what it refreshed (25 ms on a million access rows, against 0.4-0.8 s for reading the
  // mirror's keys), a full pass all of them (about 1 s). Pairs arrive as JSON [[mirror, user, server]].
  const keysSeenSince = sqlite.prepare<[string, string], { n: number }>(
    `SELECT count(DISTINCT a.key) AS n FROM json_each(?) p
       CROSS JOIN resource_access a INDEXED BY resource_access_pair
         ON a.mirror = p.value ->> 0 AND a.user_email = p.value ->> 1
        AND a.server_instance_id = p.value ->> 2 AND a.last_seen_at >= ?`,
  );

  // The held pairs' revocable rows through the pair index, each key once however many users hold
  // it. Pairs arrive as JSON [[mirror, user, server, snapshotAt]].
  const revocableKeys = sqlite.prepare<[string, number], { n: number }>(
    `SELECT count(DISTINCT a.key) AS n FROM json_each(?) p
       CROSS JOIN resource_access a INDEXED BY resource_access_pair
         ON a.mirror = p.value ->> 0 AND a.user_email = p.value ->> 1
        AND a.server_instance_id = p.value ->> 2 AND a.last_seen_at < p.value ->> 3
      WHERE a.missed_full_count >= ? - 1`,
  );

  const anyAccess = db
    .select({ one: sql<number>`1` })
    .from(resourceAccess)
    .where(eq(resourceAccess.key, p("key")))
    .limit(1)
    .prepare();

  // Each source of a full snapshot counts and sweeps its pair: prepared once.
  const pairKeys = db.select({ n: count() }).from(resourceAccess).where(pairWhere).prepare();
  const revocable = db
    .select({ n: count() })
    .from(resourceAccess)
    .where(
      and(
        pairWhere,
        lt(resourceAccess.lastSeenAt, p("snapshotAt")),
        gte(resourceAccess.missedFullCount, p("misses")),
      ),
    )
    .prepare();
  // A pair's rows removed a batch at a time: the keys of the pair's first `limit` rows that match,
  // each removed by the primary key (mirror, user, key). A missed key reaches the threshold with
  // this miss when it has missed one fewer before it, so the batches are taken before the miss
  // of the keys left is counted.
  const PAIR = "mirror = @mirror AND user_email = @userEmail AND server_instance_id = @serverInstanceId";
  const MISSED = `${PAIR} AND last_seen_at < @snapshotAt`;
  const deleteBatch = (where: string) =>
    sqlite.prepare<[Record<string, string | number>], { key: string }>(
      `DELETE FROM resource_access WHERE mirror = @mirror AND user_email = @userEmail
          AND key IN (SELECT key FROM resource_access WHERE ${where} LIMIT @limit)
       RETURNING key`,
    );
  const revokeMissed = deleteBatch(`${MISSED} AND missed_full_count >= @threshold - 1`);
  const revokeSome = deleteBatch(PAIR);
  const countMiss = sqlite.prepare<[Record<string, string>]>(
    `UPDATE resource_access SET missed_full_count = missed_full_count + 1 WHERE ${MISSED}`,
  );
  const pairParams = (pair: PairRef) => ({
    mirror: pair.mirror,
    userEmail: pair.userEmail,
    serverInstanceId: pair.serverInstanceId,
  });

  /** True when the user had no access to the key before. */
  const see = (row: SeenRow): boolean => {
    // Refresh first: in steady state (incrementals, nightly fulls) the row exists, so one statement.
    if (refresh.run(row.source, row.seenAt, row.mirror, row.userEmail, row.key).changes === 1) return false;
    insertNew.run(row.mirror, row.userEmail, row.key, row.serverInstanceId, row.source, row.seenAt);
    return true;
  };

  return {
    // In process a batch saves nothing: row by row.
    seeAll(rows: readonly SeenRow[]): boolean[] {
      return rows.map(see);
    },

    keysWithAccess(keys: readonly string[]): Set<string> {
      return new Set(keys.filter((key) => anyAccess.get({ key }) !== undefined));
    },

    countPairKeys(pair: PairRef): number {
      return pairKeys.get(pair)?.n ?? 0;
    },

    /** Keys this pair holds that a snapshot created at `snapshotAt` did not see and that reached `threshold` misses. */
    countRevocable(pair: PairRef, snapshotAt: string, threshold: number): number {
      return revocable.get({ ...pair, snapshotAt, misses: threshold - 1 })?.n ?? 0;
    },

    countRevocableEach(pairs: readonly { pair: PairRef; snapshotAt: string }[], threshold: number): number[] {
      return pairs.map(
        ({ pair, snapshotAt }) => revocable.get({ ...pair, snapshotAt, misses: threshold - 1 })?.n ?? 0,
      );
    },

    countRevocableKeys(pairs: readonly { pair: PairRef; snapshotAt: string }[], threshold: number): number {
      if (pairs.length === 0) return 0;
      const json = JSON.stringify(
        pairs.map(({ pair, snapshotAt }) => [pair.mirror, pair.userEmail, pair.serverInstanceId, snapshotAt]),
      );
      return revocableKeys.get(json, threshold)?.n ?? 0;
    },

    sweepMissed(pair: PairRef, snapshotAt: string, threshold: number, limit: number): string[] {
      const at = { ...pairParams(pair), snapshotAt };
      const keys = revokeMissed.all({ ...at, threshold, limit }).map((r) => r.key);
      if (keys.length < limit) countMiss.run(at);
      return keys;
    },

    revokePair(pair: PairRef, limit: number): string[] {
      return revokeSome.all({ ...pairParams(pair), limit }).map((r) => r.key);
    },

    /** Distinct (user, server) pairs holding access through the mirror. */
    pairsWithAccess(mirror: string): PairRef[] {
      return db
        .selectDistinct({
          mirror: resourceAccess.mirror,
          userEmail: resourceAccess.userEmail,
          serverInstanceId: resourceAccess.serverInstanceId,
        })
        .from(resourceAccess)
        .where(eq(resourceAccess.mirror, mirror))
        .all();
    },

    /** Live resources visible through the mirror (the `syncmirror_resources` gauge). */
    countLive(mirror: string): number {
      return liveKeys.get(mirror, mirror)?.n ?? 0;
    },

    countKeysSeenSince(pairs: readonly PairRef[], since: string): number {
      const json = JSON.stringify(pairs.map((p) => [p.mirror, p.userEmail, p.serverInstanceId]));
      return keysSeenSince.get(json, since)?.n ?? 0;
    },
  };
}
