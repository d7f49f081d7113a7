/**
 * Leases shared by replicas (docs/scaling-out.md#fencing). Expiry is judged by the
 * database clock, so replicas whose clocks differ by a few seconds still agree on who holds what:
 * `clock_timestamp()`, not `now()` (when the transaction began), since a takeover may wait on the
 * old holder's write for longer than the lease it takes, and would get a lease already expired.
 */
import type { LeaseRepo } from "../store.js";
import type { Lease } from "../types.js";
import { type Conn, queryOne } from "./connection.js";
import { toIso } from "./schema.js";

interface LeaseRow {
  mirror: string;
  holder: string;
  holder_name: string;
  holder_scope: string | null;
  epoch: number;
  expires_at: Date;
  lease_seconds: number;
}

const toLease = (r: LeaseRow): Lease => ({
  mirror: r.mirror,
  holder: r.holder,
  holderName: r.holder_name,
  holderScope: r.holder_scope,
  epoch: r.epoch,
  expiresAt: toIso(r.expires_at),
  leaseSeconds: r.lease_seconds,
});

const LIVE = "released_at IS NULL AND expires_at > clock_timestamp()";
const FENCE = `mirror = $1 AND holder = $2 AND epoch = $3 AND ${LIVE}`;

/**
 * The previous row is read `FOR UPDATE` in the same statement, so two replicas taking an expired
 * lease at once are ordered: the second sees the first's fresh lease and takes nothing. The epoch
 * stays only when the holder asks again for the lease it still holds.
 */
const TAKE = `
  UPDATE leases AS l SET holder = $2, holder_name = $3, holder_scope = $6, released_at = NULL,
    epoch = CASE WHEN old.holder = $2 AND old.released_at IS NULL AND old.expires_at > clock_timestamp()
                 THEN old.epoch ELSE old.epoch + 1 END,
    expires_at = clock_timestamp() + make_interval(secs => $4::int), lease_seconds = $4::int
  FROM (SELECT * FROM leases WHERE mirror = $1 FOR UPDATE) AS old
  WHERE l.mirror = old.mirror
    AND (old.holder IN ($2, $5) OR old.released_at IS NOT NULL OR old.expires_at <= clock_timestamp())
  RETURNING l.epoch, l.expires_at, clock_timestamp() AS taken_at, old.released_at IS NULL AND old.holder <> $2 AS took_over,
    old.mirror, old.holder, old.holder_name, old.holder_scope, old.epoch AS old_epoch, old.expires_at AS old_expires_at,
    old.lease_seconds`;

const CREATE = `
  INSERT INTO leases (mirror, holder, holder_name, holder_scope, epoch, expires_at, lease_seconds)
  VALUES ($1, $2, $3, $5, 1, clock_timestamp() + make_interval(secs => $4::int), $4::int)
  ON CONFLICT (mirror) DO NOTHING
  RETURNING epoch, expires_at, clock_timestamp() AS taken_at`;

type Taken = Omit<LeaseRow, "epoch" | "expires_at"> & {
  epoch: number;
  expires_at: Date;
  taken_at: Date;
  took_over: boolean;
  old_epoch: number;
  old_expires_at: Date;
};

export function createLeaseRepo({ client }: Conn): LeaseRepo {
  return {
    async acquire(mirror, holder, ttlSeconds, replacing = holder.id) {
      const args = [mirror, holder.id, holder.name, ttlSeconds];
      const taken = await queryOne<Taken>(client, { text: TAKE, values: [...args, replacing, holder.scope] });
      if (taken) {
        return {
          epoch: taken.epoch,
          expiresAt: toIso(taken.expires_at),
          takenAt: toIso(taken.taken_at),
          tookOver: taken.took_over
            ? toLease({ ...taken, epoch: taken.old_epoch, expires_at: taken.old_expires_at })
            : null,
        };
      }
      const created = await queryOne<{ epoch: number; expires_at: Date; taken_at: Date }>(client, {
        text: CREATE,
        values: [...args, holder.scope],
      });
      if (!created) return null;
      return {
        epoch: created.epoch,
        expiresAt: toIso(created.expires_at),
        takenAt: toIso(created.taken_at),
        tookOver: null,
      };
    },

    async renew(fence, ttlSeconds) {
      const renewed = await client.query({
        text: `UPDATE leases SET expires_at = clock_timestamp() + make_interval(secs => $4::int), lease_seconds = $4::int
               WHERE ${FENCE}`,
        values: [fence.mirror, fence.holder, fence.epoch, ttlSeconds],
      });
      return renewed.rowCount === 1;
    },

    async isHeld(fence) {
      // The share lock makes a takeover wait for this transaction; a holder frozen inside it (paused,
      // partitioned) must not keep it forever, so the session ends after one lease of idling.
      const held = await client.query({
        name: "syncmirror_lease_held",
        text: `SELECT set_config('idle_in_transaction_session_timeout', (lease_seconds * 1000)::text, true)
               FROM leases WHERE ${FENCE} FOR SHARE`,
        values: [fence.mirror, fence.holder, fence.epoch],
      });
      return held.rowCount === 1;
    },

    async release(fence) {
      await client.query({
        text: `UPDATE leases SET released_at = clock_timestamp()
               WHERE mirror = $1 AND holder = $2 AND epoch = $3 AND released_at IS NULL`,
        values: [fence.mirror, fence.holder, fence.epoch],
      });
    },

    async holders() {
      const { rows } = await client.query<LeaseRow>(`SELECT * FROM leases WHERE ${LIVE}`);
      return new Map(rows.map((r) => [r.mirror, toLease(r)]));
    },
  };
}
