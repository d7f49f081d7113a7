/**
 * What a full snapshot's sweep would do, without doing it: the keys each user saw are kept in a
 * scratch table by trigger and compared with `resource_access`.
 */
import { sql } from "drizzle-orm";
import type { DryRunRepo } from "../store.js";
import type { Conn } from "./connection.js";
import { pgText } from "./pg-values.js";

export function createDryRunRepo({ db }: Conn): DryRunRepo {
  const count = async (query: ReturnType<typeof sql>): Promise<number> => {
    const { rows } = await db.execute<{ n: string }>(query);
    return Number(rows[0]?.n ?? 0);
  };
  return {
    async seen(t, userEmail, keys) {
      if (keys.length === 0) return;
      await db.execute(sql`INSERT INTO dry_run_seen (trigger_row_id, user_email, key)
        SELECT ${t}, ${userEmail}, k FROM unnest(${sql.param(keys.map(pgText))}::text[]) AS k
        ON CONFLICT DO NOTHING`);
    },

    async collectPair(t, p) {
      const { rowCount } =
        await db.execute(sql`INSERT INTO dry_run_revoke (trigger_row_id, mirror, user_email, key)
        SELECT ${t}, a.mirror, a.user_email, a.key FROM resource_access a
        WHERE a.mirror = ${p.mirror} AND a.user_email = ${p.userEmail} AND a.server_instance_id = ${p.serverInstanceId}
          AND a.missed_full_count + 1 >= ${p.threshold}
          AND NOT EXISTS (SELECT 1 FROM dry_run_seen s
            WHERE s.trigger_row_id = ${t} AND s.user_email = a.user_email AND s.key = a.key)
        ON CONFLICT DO NOTHING`);
      return rowCount ?? 0;
    },

    async forgetPair(t, p) {
      await db.execute(sql`DELETE FROM dry_run_revoke
        WHERE trigger_row_id = ${t} AND mirror = ${p.mirror} AND user_email = ${p.userEmail} AND key IN (SELECT a.key
          FROM resource_access a WHERE a.mirror = ${p.mirror} AND a.user_email = ${p.userEmail}
            AND a.server_instance_id = ${p.serverInstanceId})`);
    },

    async collectWholePair(t, p) {
      await db.execute(sql`INSERT INTO dry_run_revoke (trigger_row_id, mirror, user_email, key)
        SELECT ${t}, a.mirror, a.user_email, a.key FROM resource_access a
        WHERE a.mirror = ${p.mirror} AND a.user_email = ${p.userEmail} AND a.server_instance_id = ${p.serverInstanceId}
        ON CONFLICT DO NOTHING`);
    },

    async totals(t, limit, before) {
      // Keys the marks (this trigger's and the `before` ones') take the last live access from: the
      // sweep would tombstone them.
      const applied = sql.param([t, ...before]);
      const deletable = sql`FROM dry_run_revoke d
        JOIN resources r ON r.key = d.key AND r.deleted_at IS NULL
        WHERE d.trigger_row_id = ${t} AND NOT EXISTS (SELECT 1 FROM resource_access a WHERE a.key = d.key
          AND NOT EXISTS (SELECT 1 FROM dry_run_revoke x WHERE x.trigger_row_id = ANY(${applied}::int[])
            AND x.mirror = a.mirror AND x.user_email = a.user_email AND x.key = a.key))`;
      const wouldRevoke = await count(
        sql`SELECT count(*) AS n FROM dry_run_revoke WHERE trigger_row_id = ${t}`,
      );
      const wouldDelete = await count(sql`SELECT count(DISTINCT d.key) AS n ${deletable}`);
      // Byte order, as SQLite sorts: the lists read the same on both dialects.
      const { rows: revoke } = await db.execute<{ user_email: string; key: string }>(
        sql`SELECT user_email, key FROM dry_run_revoke WHERE trigger_row_id = ${t}
          ORDER BY user_email COLLATE "C", key COLLATE "C" LIMIT ${limit}`,
      );
      const { rows: del } = await db.execute<{ key: string }>(
        sql`SELECT DISTINCT d.key COLLATE "C" AS key ${deletable} ORDER BY 1 LIMIT ${limit}`,
      );
      await db.execute(sql`DELETE FROM dry_run_seen WHERE trigger_row_id = ${t}`);
      return {
        would_revoke: wouldRevoke,
        would_delete: wouldDelete,
        revoke: revoke.map((r) => ({ user_email: r.user_email, key: r.key })),
        revoke_truncated: wouldRevoke > revoke.length,
        delete: del.map((r) => r.key),
        delete_truncated: wouldDelete > del.length,
      };
    },

    async release(ts) {
      await db.execute(
        sql`DELETE FROM dry_run_revoke WHERE trigger_row_id = ANY(${sql.param([...ts])}::int[])`,
      );
    },
  };
}
