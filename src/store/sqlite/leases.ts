/**
 * Leases on SQLite. One process holds the database's writer lock, so these never contend; they
 * exist so the sync code, its fencing included, runs the same whichever store it has.
 */
import type { LeaseRepo } from "../store.js";
import type { Lease, LeaseGrant, LeaseHolder } from "../types.js";
import type { Db } from "./open.js";
import type { Sync } from "./sync-repo.js";

interface LeaseRow {
  mirror: string;
  holder: string;
  holder_name: string;
  holder_scope: string | null;
  epoch: number;
  expires_at: string;
  lease_seconds: number;
  released_at: string | null;
}

const toLease = (r: LeaseRow): Lease => ({
  mirror: r.mirror,
  holder: r.holder,
  holderName: r.holder_name,
  holderScope: r.holder_scope,
  epoch: r.epoch,
  expiresAt: r.expires_at,
  leaseSeconds: r.lease_seconds,
});

/**
 * Leases a process that died left behind, found by the process that took the writer lock after it
 * (the only one, so none of them is live). They are expired on the spot, so that no reader shows a
 * dead holder, and kept here as they were, so that taking one over is counted and logged as on
 * PostgreSQL, with its holder and the time since its last renewal.
 */
export function expireLeftLeases(sqlite: Db["$client"], at: Date): Map<string, Lease> {
  const iso = at.toISOString();
  const left = sqlite
    .prepare<[string], LeaseRow>("SELECT * FROM leases WHERE released_at IS NULL AND expires_at > ?")
    .all(iso);
  sqlite
    .prepare<[string, string]>(
      "UPDATE leases SET expires_at = ? WHERE released_at IS NULL AND expires_at > ?",
    )
    .run(iso, iso);
  return new Map(left.map((r) => [r.mirror, toLease(r)]));
}

export function createLeaseRepo(db: Db, now: () => Date, left: ReadonlyMap<string, Lease>): Sync<LeaseRepo> {
  const sqlite = db.$client;
  const iso = (offsetSeconds = 0) => new Date(now().getTime() + offsetSeconds * 1000).toISOString();
  const find = sqlite.prepare<[string], LeaseRow>("SELECT * FROM leases WHERE mirror = ?");
  const write = sqlite.prepare<[string, string, string, string | null, number, string, number]>(
    `INSERT INTO leases (mirror, holder, holder_name, holder_scope, epoch, expires_at, lease_seconds, released_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, NULL)
     ON CONFLICT (mirror) DO UPDATE SET holder = excluded.holder, holder_name = excluded.holder_name,
       holder_scope = excluded.holder_scope,
       epoch = excluded.epoch, expires_at = excluded.expires_at, lease_seconds = excluded.lease_seconds,
       released_at = NULL`,
  );
  const live = "mirror = ? AND holder = ? AND epoch = ? AND released_at IS NULL AND expires_at > ?";
  // Every write of a pass checks the lease inside its transaction: prepared once.
  const held = sqlite.prepare<[string, string, number, string]>(`SELECT 1 FROM leases WHERE ${live}`);
  const extend = sqlite.prepare<[string, number, string, string, number, string]>(
    `UPDATE leases SET expires_at = ?, lease_seconds = ? WHERE ${live}`,
  );
  const release = sqlite.prepare<[string, string, string, number]>(
    "UPDATE leases SET released_at = ? WHERE mirror = ? AND holder = ? AND epoch = ? AND released_at IS NULL",
  );
  const holders = sqlite.prepare<[string], LeaseRow>(
    "SELECT * FROM leases WHERE released_at IS NULL AND expires_at > ?",
  );
  // Read and write as one: a savepoint when a transaction is already open.
  const take = sqlite.transaction((mirror: string, holder: LeaseHolder, ttl: number, replacing: string) => {
    const at = iso();
    const row = find.get(mirror);
    const isLive = row !== undefined && row.released_at === null && row.expires_at > at;
    if (row && isLive && row.holder !== holder.id && row.holder !== replacing) return null;
    const keeps = row !== undefined && isLive && row.holder === holder.id;
    const epoch = row === undefined ? 1 : keeps ? row.epoch : row.epoch + 1;
    const expiresAt = iso(ttl);
    write.run(mirror, holder.id, holder.name, holder.scope, epoch, expiresAt, ttl);
    const before = left.get(mirror);
    const previous = (r: LeaseRow) =>
      before?.holder === r.holder && before.epoch === r.epoch ? before : toLease(r);
    const tookOver = row && row.released_at === null && row.holder !== holder.id ? previous(row) : null;
    return { epoch, expiresAt, takenAt: at, tookOver } satisfies LeaseGrant;
  });
  return {
    acquire(mirror, holder, ttlSeconds, replacing = holder.id) {
      return take(mirror, holder, ttlSeconds, replacing);
    },
    renew(fence, ttlSeconds) {
      return (
        extend.run(iso(ttlSeconds), ttlSeconds, fence.mirror, fence.holder, fence.epoch, iso()).changes === 1
      );
    },
    isHeld(fence) {
      return held.get(fence.mirror, fence.holder, fence.epoch, iso()) !== undefined;
    },
    release(fence) {
      release.run(iso(), fence.mirror, fence.holder, fence.epoch);
    },
    holders() {
      return new Map(holders.all(iso()).map((r) => [r.mirror, toLease(r)]));
    },
  };
}
