/**
 * The public `changes` feed: a consumer keeps the last `seq` it processed and reads onward (or
 * waits for the NOTIFY the store sends when a transaction that recorded changes commits).
 *
 * With several replicas, seqs handed out as rows are inserted would not commit in order: a
 * consumer could read seq 11 and move past seq 10 before 10's page commits. So a transaction's
 * changes are renumbered just before its COMMIT, under a lock held until the commit: every seq a
 * consumer sees commits before any higher one.
 */

import type pg from "pg";
import type { ChangeRepo } from "../store.js";
import { type Conn, queryOne } from "./connection.js";
import { pgText } from "./pg-values.js";

// One round trip per recorded change, since a cold mirror records one for most rows: an earlier
// change of the key in the scope either stands (same op, or an `upsert` beside an `access`) or is
// replaced by this one, appended anew so a consumer past its seq still sees it.
const RECORD = "syncmirror_changes_record";
const RECORD_SQL = `WITH prior AS (
    SELECT seq, op FROM changes WHERE sync_id = $5 AND key = $1 LIMIT 1
  ), stands AS (
    SELECT 1 FROM prior WHERE op = $2 OR (op = 'upsert' AND $2 = 'access')
  ), replaced AS (
    DELETE FROM changes WHERE seq IN (SELECT seq FROM prior) AND NOT EXISTS (SELECT 1 FROM stands)
  )
  INSERT INTO changes (key, op, at, mirror, sync_id)
  SELECT $1, $2, $3::timestamptz, $4, $5 WHERE NOT EXISTS (SELECT 1 FROM stands)
  RETURNING seq`;

export function createChangeRepo({ client }: Conn, onRecorded: (seq: number) => void): ChangeRepo {
  return {
    async record(c) {
      const row = await queryOne<{ seq: string }>(client, {
        name: RECORD,
        text: RECORD_SQL,
        values: [pgText(c.key), c.op, c.at, c.mirror, c.scope],
      });
      if (row === undefined) return false;
      onRecorded(Number(row.seq));
      return true;
    },
  };
}

/** Any fixed number, the same in every syncmirror: held from renumbering a transaction's changes to its COMMIT. */
const PUBLISH_LOCK = 0x5_9c_4d_12;
/** Consumers LISTEN here; the payload is `<mirror>:<last seq>` (SPEC "Scale-out"). */
export const CHANGES_CHANNEL = "syncmirror_changes";

/**
 * The transaction's changes (`seqs`, as recorded) take fresh seqs in their recorded order, and a
 * NOTIFY per mirror carries its highest: call last before COMMIT, which releases the lock.
 */
export async function publishChanges(client: pg.PoolClient, seqs: readonly number[]): Promise<void> {
  await client.query("SELECT pg_advisory_xact_lock($1)", [PUBLISH_LOCK]);
  await client.query(
    `WITH moved AS (
       DELETE FROM changes WHERE seq = ANY($1::bigint[]) RETURNING seq, key, op, at, mirror, sync_id
     ), renumbered AS (
       INSERT INTO changes (key, op, at, mirror, sync_id)
       SELECT key, op, at, mirror, sync_id FROM moved ORDER BY seq
       RETURNING mirror, seq
     )
     SELECT pg_notify('${CHANGES_CHANNEL}', mirror || ':' || max(seq)) FROM renumbered GROUP BY mirror`,
    [seqs],
  );
}
