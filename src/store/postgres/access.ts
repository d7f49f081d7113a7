/**
 * The public `resource_access` table: which user may see which key through which mirror.
 */
import { and, count, eq, exists, isNull, sql } from "drizzle-orm";
import type { AccessRepo } from "../store.js";
import type { PairRef } from "../types.js";
import { type Conn, queryOne } from "./connection.js";
import { pgText } from "./pg-values.js";
import { resourceAccess, resources } from "./schema.js";

// A page's rows in one named prepared upsert. `xmax = 0` holds for a row this statement inserted,
// not for one it updated, which is exactly "had no access before". ON CONFLICT cannot touch a row
// twice in one statement, so a row repeated in the batch is folded into its first, as row by row
// would leave it: the source of the last, the latest last_seen_at.
const SEE_ALL = "syncmirror_access_see_all";
const SEE_ALL_SQL = `INSERT INTO resource_access (mirror, user_email, key, server_instance_id, source, last_seen_at, missed_full_count)
  SELECT m, u, k, s, src, at, 0
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[]) AS t(m, u, k, s, src, at)
  ON CONFLICT (mirror, user_email, key) DO UPDATE SET source = excluded.source,
    last_seen_at = GREATEST(resource_access.last_seen_at, excluded.last_seen_at), missed_full_count = 0
  RETURNING mirror, user_email, key, (xmax = 0) AS inserted`;

// A pair's sweep in one statement (one round trip): the missed rows that reach `threshold` with
// this miss are revoked, the others count it. Two disjoint sets of rows: one statement may not
// both update a row and delete it.
const SWEEP_MISSED = "syncmirror_access_sweep_missed";
const MISSED = `mirror = $1 AND user_email = $2 AND server_instance_id = $3 AND last_seen_at < $4::timestamptz`;
/**
 * The rows of the user's keys in `keys` (an array computed once, before any row is deleted).
 * Joined to the table, not `key IN (subquery)`: on a table not yet analyzed (a cold mirror swept
 * right after its ingest, autovacuum behind or off) the planner guessed one row each side and
 * ran the subquery again for every row the user holds, a scan of the pair's index per row: 3 ms
 * per pair when nothing was missed (2,000 rows), 300 ms to revoke 1,000 of them, growing with the
 * square of the user's rows. The array is an InitPlan run once, whatever the statistics.
 */
const PAIR_KEYS_IN = (keys: string) => `DELETE FROM resource_access a USING unnest(ARRAY(${keys})) AS d(key)
      WHERE a.mirror = $1 AND a.user_email = $2 AND a.key = d.key RETURNING a.key`;
// At most $6 of the missed keys reaching the threshold with this miss are removed (by the primary
// key: mirror, user, key); the call that removes fewer, the last of the pair's batches, also
// counts the miss of the keys left. The UPDATE reads the snapshot from before the DELETE: the
// rows it counts are never those removed, and a batch before it never takes a row it counted.
export const SWEEP_MISSED_SQL = `WITH removed AS (
    ${PAIR_KEYS_IN(`SELECT key FROM resource_access WHERE ${MISSED} AND missed_full_count >= $5::int - 1 LIMIT $6::int`)}
  ), counted AS (
    UPDATE resource_access SET missed_full_count = missed_full_count + 1
     WHERE ${MISSED} AND missed_full_count < $5::int - 1
       AND (SELECT count(*) FROM removed) < $6::int
  )
  SELECT key FROM removed`;

const REVOKE_PAIR = "syncmirror_access_revoke_pair";
export const REVOKE_PAIR_SQL = PAIR_KEYS_IN(
  "SELECT key FROM resource_access WHERE mirror = $1 AND user_email = $2 AND server_instance_id = $3 LIMIT $4::int",
);

// Keys each pair holds that its snapshot did not see and that reach the threshold, in the order
// asked (`countRevocable` is this for one pair): each pair's count is an index scan of its rows.
const REVOCABLE_EACH_SQL = `SELECT (
    SELECT count(*) FROM resource_access a
     WHERE a.mirror = p.mirror AND a.user_email = p.user_email AND a.server_instance_id = p.server
       AND a.last_seen_at < p.snapshot_at AND a.missed_full_count >= $5::int - 1)::int AS n
  FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]) WITH ORDINALITY
    AS p(mirror, user_email, server, snapshot_at, i)
  ORDER BY p.i`;

// The keys of REVOCABLE_EACH_SQL's rows over all the pairs, each once however many users hold it,
// made distinct in a subquery for the reason KEYS_SEEN_SINCE_SQL gives.
export const REVOCABLE_KEYS_SQL = `SELECT count(*)::int AS n FROM (
    SELECT DISTINCT a.key
      FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]) AS p(mirror, user_email, server, snapshot_at)
      JOIN resource_access a ON a.mirror = p.mirror AND a.user_email = p.user_email
       AND a.server_instance_id = p.server AND a.last_seen_at < p.snapshot_at
       AND a.missed_full_count >= $5::int - 1) AS revocable`;

// Each pair's rows from $4 on, each key once however many users hold it. DISTINCT in a subquery,
// not count(DISTINCT): the planner can then deduplicate by hash, in the parallel workers too, where
// count(DISTINCT) sorted every row in one process and spilled it to disk (a full pass's count over
// 60,000 keys held by five users: 344 ms that way, 150 ms this way).
export const KEYS_SEEN_SINCE_SQL = `SELECT count(*)::int AS n FROM (
    SELECT DISTINCT a.key
      FROM unnest($1::text[], $2::text[], $3::text[]) AS p(mirror, user_email, server_instance_id)
      JOIN resource_access a ON a.mirror = p.mirror AND a.user_email = p.user_email
       AND a.server_instance_id = p.server_instance_id AND a.last_seen_at >= $4::timestamptz) AS seen`;

// The distinct pairs by walking the pair index from one pair to the next (a lookup per pair),
// where DISTINCT read every access row of the mirror: 0.3 ms instead of 15 ms on 20,000 rows.
const PAIRS_WITH_ACCESS_SQL = `WITH RECURSIVE p AS (
    (SELECT user_email, server_instance_id FROM resource_access WHERE mirror = $1
      ORDER BY user_email, server_instance_id LIMIT 1)
    UNION ALL
    SELECT n.user_email, n.server_instance_id FROM p, LATERAL (
      SELECT user_email, server_instance_id FROM resource_access
       WHERE mirror = $1 AND (user_email, server_instance_id) > (p.user_email, p.server_instance_id)
       ORDER BY user_email, server_instance_id LIMIT 1) AS n
  )
  SELECT user_email, server_instance_id FROM p`;

// Which of the keys asked any access row names: one probe of the key index per key, stopping at
// its first row. As `key IN (...)` on a table not yet analyzed (a cold mirror, autovacuum behind),
// the planner guessed half the table matched and read all of it: 680 ms per 500 keys at 720,000
// rows against 32 ms this way (and 80 ms against 3 ms once analyzed: every user's row fetched).
export const KEYS_WITH_ACCESS_SQL = `SELECT k FROM unnest($1::text[]) AS t(k)
  WHERE EXISTS (SELECT 1 FROM resource_access a WHERE a.key = t.k)`;

const rowId = (mirror: string, userEmail: string, key: string) => `${mirror}\n${userEmail}\n${key}`;

const pairWhere = (pair: PairRef) =>
  and(
    eq(resourceAccess.mirror, pair.mirror),
    eq(resourceAccess.userEmail, pair.userEmail),
    eq(resourceAccess.serverInstanceId, pair.serverInstanceId),
  );

export function createAccessRepo({ db, client }: Conn): AccessRepo {
  const revocableValues = (pairs: readonly { pair: PairRef; snapshotAt: string }[], threshold: number) => [
    pairs.map((p) => p.pair.mirror),
    pairs.map((p) => p.pair.userEmail),
    pairs.map((p) => p.pair.serverInstanceId),
    pairs.map((p) => p.snapshotAt),
    threshold,
  ];
  const countRevocableEach: AccessRepo["countRevocableEach"] = async (pairs, threshold) => {
    if (pairs.length === 0) return [];
    const { rows } = await client.query<{ n: number }>({
      text: REVOCABLE_EACH_SQL,
      values: revocableValues(pairs, threshold),
    });
    return rows.map((r) => r.n);
  };
  return {
    async seeAll(rows) {
      if (rows.length === 0) return [];
      // One array per column; a repeat updates its first's slot instead of taking one.
      const columns = {
        mirror: [] as string[],
        user: [] as string[],
        key: [] as string[],
        server: [] as string[],
        source: [] as string[],
        seenAt: [] as string[],
      };
      const firstAt = new Map<string, number>();
      const asked = rows.map((row) => {
        const key = pgText(row.key);
        const id = rowId(row.mirror, row.userEmail, key);
        const at = firstAt.get(id);
        if (at !== undefined) {
          columns.source[at] = row.source;
          if (row.seenAt > (columns.seenAt[at] as string)) columns.seenAt[at] = row.seenAt;
          return { id, first: false };
        }
        firstAt.set(id, columns.key.length);
        columns.mirror.push(row.mirror);
        columns.user.push(row.userEmail);
        columns.key.push(key);
        columns.server.push(row.serverInstanceId);
        columns.source.push(row.source);
        columns.seenAt.push(row.seenAt);
        return { id, first: true };
      });
      const { mirror, user, key, server, source, seenAt } = columns;
      const { rows: answered } = await client.query<{
        mirror: string;
        user_email: string;
        key: string;
        inserted: boolean;
      }>({ name: SEE_ALL, text: SEE_ALL_SQL, values: [mirror, user, key, server, source, seenAt] });
      const inserted = new Set(
        answered.filter((r) => r.inserted).map((r) => rowId(r.mirror, r.user_email, r.key)),
      );
      // Only a row's first occurrence can be the one that gave access.
      return asked.map(({ id, first }) => first && inserted.has(id));
    },

    async keysWithAccess(keys) {
      if (keys.length === 0) return new Set();
      // Keys are stored as pgText makes them (NUL replaced): answer with the caller's own key.
      const asCalled = new Map(keys.map((key) => [pgText(key), key]));
      const { rows } = await client.query<{ k: string }>({
        text: KEYS_WITH_ACCESS_SQL,
        values: [[...asCalled.keys()]],
      });
      return new Set(rows.map((r) => asCalled.get(r.k) ?? r.k));
    },

    async countPairKeys(pair) {
      const [row] = await db.select({ n: count() }).from(resourceAccess).where(pairWhere(pair));
      return row?.n ?? 0;
    },

    async countRevocable(pair, snapshotAt, threshold) {
      const [n] = await countRevocableEach([{ pair, snapshotAt }], threshold);
      return n ?? 0;
    },

    countRevocableEach,

    async countRevocableKeys(pairs, threshold) {
      if (pairs.length === 0) return 0;
      const row = await queryOne<{ n: number }>(client, {
        text: REVOCABLE_KEYS_SQL,
        values: revocableValues(pairs, threshold),
      });
      return row?.n ?? 0;
    },

    async sweepMissed(pair, snapshotAt, threshold, limit) {
      const { rows } = await client.query<{ key: string }>({
        name: SWEEP_MISSED,
        text: SWEEP_MISSED_SQL,
        values: [pair.mirror, pair.userEmail, pair.serverInstanceId, snapshotAt, threshold, limit],
      });
      return rows.map((r) => r.key);
    },

    async revokePair(pair, limit) {
      const { rows } = await client.query<{ key: string }>({
        name: REVOKE_PAIR,
        text: REVOKE_PAIR_SQL,
        values: [pair.mirror, pair.userEmail, pair.serverInstanceId, limit],
      });
      return rows.map((r) => r.key);
    },

    async pairsWithAccess(mirror) {
      const { rows } = await client.query<{ user_email: string; server_instance_id: string }>({
        text: PAIRS_WITH_ACCESS_SQL,
        values: [mirror],
      });
      return rows.map((r) => ({ mirror, userEmail: r.user_email, serverInstanceId: r.server_instance_id }));
    },

    async countLive(mirror) {
      // Each live resource once, if the mirror gives anyone access to it: a semi-join on the
      // (key, mirror) index, where counting the distinct keys of the joined access rows cost ten
      // times as much (every user's row fetched, then deduplicated).
      const [row] = await db
        .select({ n: count() })
        .from(resources)
        .where(
          and(
            isNull(resources.deletedAt),
            exists(
              db
                .select({ one: sql`1` })
                .from(resourceAccess)
                .where(and(eq(resourceAccess.key, resources.key), eq(resourceAccess.mirror, mirror))),
            ),
          ),
        );
      return row?.n ?? 0;
    },

    async countKeysSeenSince(pairs, since) {
      const row = await queryOne<{ n: number }>(client, {
        text: KEYS_SEEN_SINCE_SQL,
        values: [
          pairs.map((p) => p.mirror),
          pairs.map((p) => p.userEmail),
          pairs.map((p) => p.serverInstanceId),
          since,
        ],
      });
      return row?.n ?? 0;
    },
  };
}
