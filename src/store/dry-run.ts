/**
 * What a full snapshot's sweep would do, without doing it: the keys each user saw go into a
 * TEMP table (private to this connection, gone when it closes), compared with `resource_access`.
 */
import type { OpenDatabase } from "./db.js";

export function createDryRunStore(open: OpenDatabase) {
  const { sqlite } = open;
  sqlite.exec(
    "CREATE TEMP TABLE IF NOT EXISTS dry_seen (user_email TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (user_email, key))",
  );
  sqlite.exec(`CREATE TEMP TABLE IF NOT EXISTS dry_revoke (mirror TEXT NOT NULL, user_email TEXT NOT NULL, key TEXT NOT NULL,
    PRIMARY KEY (mirror, user_email, key))`);
  const see = sqlite.prepare("INSERT OR IGNORE INTO dry_seen (user_email, key) VALUES (?, ?)");
  const collect = sqlite.prepare(`INSERT OR IGNORE INTO dry_revoke (mirror, user_email, key)
    SELECT a.mirror, a.user_email, a.key FROM resource_access a
    WHERE a.mirror = @mirror AND a.user_email = @userEmail AND a.server_instance_id = @serverInstanceId
      AND a.missed_full_count + 1 >= @threshold
      AND NOT EXISTS (SELECT 1 FROM dry_seen s WHERE s.user_email = a.user_email AND s.key = a.key)`);
  const collectAll = sqlite.prepare(`INSERT OR IGNORE INTO dry_revoke (mirror, user_email, key)
    SELECT a.mirror, a.user_email, a.key FROM resource_access a
    WHERE a.mirror = @mirror AND a.user_email = @userEmail AND a.server_instance_id = @serverInstanceId`);
  const wouldDelete = sqlite.prepare(`SELECT count(DISTINCT d.key) AS n FROM dry_revoke d
    JOIN resources r ON r.key = d.key AND r.deleted_at IS NULL
    WHERE NOT EXISTS (SELECT 1 FROM resource_access a WHERE a.key = d.key
      AND NOT EXISTS (SELECT 1 FROM dry_revoke x WHERE x.mirror = a.mirror AND x.user_email = a.user_email AND x.key = a.key))`);
  const wouldRevoke = sqlite.prepare("SELECT count(*) AS n FROM dry_revoke");

  return {
    seen(userEmail: string, keys: readonly string[]): void {
      sqlite.transaction(() => {
        for (const key of keys) see.run(userEmail, key);
      })();
    },
    /** Marks the pair's unseen keys that would reach the miss threshold. */
    collectPair(p: { mirror: string; userEmail: string; serverInstanceId: string; threshold: number }): void {
      collect.run(p);
    },
    /** Marks every key the pair holds (a user who left, a pair removed or past its grace). */
    collectWholePair(p: { mirror: string; userEmail: string; serverInstanceId: string }): void {
      collectAll.run(p);
    },
    totals(): { would_revoke: number; would_delete: number } {
      const revoke = (wouldRevoke.get() as { n: number }).n;
      const del = (wouldDelete.get() as { n: number }).n;
      sqlite.exec("DELETE FROM dry_seen; DELETE FROM dry_revoke;");
      return { would_revoke: revoke, would_delete: del };
    },
  };
}

export type DryRunStore = ReturnType<typeof createDryRunStore>;
