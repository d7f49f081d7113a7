/**
 * What a full snapshot's sweep would do, without doing it: the keys each user saw are kept in a
 * scratch table by trigger and compared with `resource_access`.
 */
import type { DryRunRepo } from "../store.js";
import type { Db } from "./open.js";
import type { Sync } from "./sync-repo.js";

export function createDryRunRepo(db: Db): Sync<DryRunRepo> {
  const sqlite = db.$client;
  const see = sqlite.prepare(
    "INSERT OR IGNORE INTO dry_run_seen (trigger_row_id, user_email, key) VALUES (?, ?, ?)",
  );
  const collect =
    sqlite.prepare(`INSERT OR IGNORE INTO dry_run_revoke (trigger_row_id, mirror, user_email, key)
    SELECT @t, a.mirror, a.user_email, a.key FROM resource_access a
    WHERE a.mirror = @mirror AND a.user_email = @userEmail AND a.server_instance_id = @serverInstanceId
      AND a.missed_full_count + 1 >= @threshold
      AND NOT EXISTS (SELECT 1 FROM dry_run_seen s WHERE s.trigger_row_id = @t AND s.user_email = a.user_email AND s.key = a.key)`);
  const collectAll =
    sqlite.prepare(`INSERT OR IGNORE INTO dry_run_revoke (trigger_row_id, mirror, user_email, key)
    SELECT @t, a.mirror, a.user_email, a.key FROM resource_access a
    WHERE a.mirror = @mirror AND a.user_email = @userEmail AND a.server_instance_id = @serverInstanceId`);
  const forget = sqlite.prepare(`DELETE FROM dry_run_revoke
    WHERE trigger_row_id = @t AND mirror = @mirror AND user_email = @userEmail AND key IN (SELECT a.key
      FROM resource_access a WHERE a.mirror = @mirror AND a.user_email = @userEmail AND a.server_instance_id = @serverInstanceId)`);
  // Keys the marks (this trigger's and those of `@applied`, a JSON array) take the last live access
  // from: the sweep would tombstone them.
  const deletable = `FROM dry_run_revoke d
    JOIN resources r ON r.key = d.key AND r.deleted_at IS NULL
    WHERE d.trigger_row_id = @t AND NOT EXISTS (SELECT 1 FROM resource_access a WHERE a.key = d.key
      AND NOT EXISTS (SELECT 1 FROM dry_run_revoke x WHERE x.trigger_row_id IN (SELECT value FROM json_each(@applied))
        AND x.mirror = a.mirror AND x.user_email = a.user_email AND x.key = a.key))`;
  const wouldDelete = sqlite.prepare<{ t: number; applied: string }, { n: number }>(
    `SELECT count(DISTINCT d.key) AS n ${deletable}`,
  );
  const deleteList = sqlite.prepare<{ t: number; applied: string; limit: number }, { key: string }>(
    `SELECT DISTINCT d.key AS key ${deletable} ORDER BY d.key LIMIT @limit`,
  );
  const wouldRevoke = sqlite.prepare<[number], { n: number }>(
    "SELECT count(*) AS n FROM dry_run_revoke WHERE trigger_row_id = ?",
  );
  const revokeList = sqlite.prepare<[number, number], { user_email: string; key: string }>(
    "SELECT user_email, key FROM dry_run_revoke WHERE trigger_row_id = ? ORDER BY user_email, key LIMIT ?",
  );
  const clearSeen = sqlite.prepare("DELETE FROM dry_run_seen WHERE trigger_row_id = ?");
  const clearRevoke = sqlite.prepare("DELETE FROM dry_run_revoke WHERE trigger_row_id = ?");

  return {
    seen(triggerRowId, userEmail, keys) {
      for (const key of keys) see.run(triggerRowId, userEmail, key);
    },
    collectPair(t, p) {
      return collect.run({
        t,
        mirror: p.mirror,
        userEmail: p.userEmail,
        serverInstanceId: p.serverInstanceId,
        threshold: p.threshold,
      }).changes;
    },
    forgetPair(t, p) {
      forget.run({ t, mirror: p.mirror, userEmail: p.userEmail, serverInstanceId: p.serverInstanceId });
    },
    collectWholePair(t, p) {
      collectAll.run({ t, mirror: p.mirror, userEmail: p.userEmail, serverInstanceId: p.serverInstanceId });
    },
    totals(t, limit, before) {
      const applied = JSON.stringify([t, ...before]);
      const wouldRevokeN = wouldRevoke.get(t)?.n ?? 0;
      const wouldDeleteN = wouldDelete.get({ t, applied })?.n ?? 0;
      const revoke = revokeList.all(t, limit);
      const del = deleteList.all({ t, applied, limit }).map((r) => r.key);
      clearSeen.run(t);
      return {
        would_revoke: wouldRevokeN,
        would_delete: wouldDeleteN,
        revoke: revoke.map((r) => ({ user_email: r.user_email, key: r.key })),
        revoke_truncated: wouldRevokeN > revoke.length,
        delete: del,
        delete_truncated: wouldDeleteN > del.length,
      };
    },
    release(ts) {
      for (const t of ts) clearRevoke.run(t);
    },
  };
}
