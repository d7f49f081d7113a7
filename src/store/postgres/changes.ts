/**
 * The public `changes` feed: a consumer keeps the last `seq` it processed and reads onward (or
 * waits for the NOTIFY the store sends when a transaction that recorded changes commits).
 *
 * With several replicas, seqs handed out as rows are recorded would not commit in order: a
 * consumer could read seq 11 and move past seq 10 before 10's page commits. So a transaction's
 * changes wait in a table of its session (PENDING: temporary, so neither logged nor indexed) and
 * move into `changes` just before its COMMIT, taking their seqs in the order they were recorded,
 * under a lock held until the commit: every seq a consumer sees commits before any higher one.
 * The lock is taken in the commit's own flight, never across a round trip to this process, so a
 * replica paused mid-transaction holds up no other replica's commits.
 */

import type pg from "pg";
import { PRIOR_OP_KEPT, replacingOp, seenChanges } from "../change-rule.js";
import type { AccessRepo, ChangeRepo } from "../store.js";
import type { ChangeOp, ChangeRecord } from "../types.js";
import type { Conn } from "./connection.js";
import { pgText } from "./pg-values.js";

/**
 * This session's recorded changes until its transaction ends. ON COMMIT DELETE ROWS empties it
 * (down to no pages: a temporary table is never vacuumed, so deleted rows would leave it as large
 * as the largest transaction's changes, to be scanned by every later one).
 */
const PENDING = "syncmirror_pending_changes";
/** Run on a connection before its first transaction (`beginOn` in postgres-store.ts). */
export const CREATE_PENDING_SQL = `CREATE TEMPORARY TABLE IF NOT EXISTS ${PENDING} (
  n bigint GENERATED ALWAYS AS IDENTITY, key text NOT NULL, op text NOT NULL,
  at timestamptz NOT NULL, mirror text NOT NULL, sync_id text NOT NULL
) ON COMMIT DELETE ROWS`;

// A cold mirror records a change for most rows, so a page's changes are two round trips: the
// changes their keys already have in their scopes (committed, or recorded earlier in this
// transaction: `pending`), then one statement that removes those the page replaces and appends
// the page's new ones in its order.
const PRIORS = "syncmirror_changes_priors";
/**
 * A key's committed change in a run, looked up through `changes_run_key` for each key asked
 * (OFFSET 0 keeps the planner from turning the lookups back into a join). As a join, the plan a
 * prepared statement settles on read every change the run had recorded so far, once per page:
 * quadratic in the run's size (64 ms of a page's 67 ms at 43,500 changes, 100,000 rows).
 */
const PRIOR_OF = (syncId: string, key: string) =>
  `SELECT seq, op FROM changes WHERE sync_id = ${syncId} AND key = ${key} OFFSET 0`;
const PRIORS_SQL = `WITH asked AS (SELECT DISTINCT s, k FROM unnest($1::text[], $2::text[]) AS t(s, k))
  SELECT c.seq AS id, false AS pending, c.op, asked.s AS sync_id, asked.k AS key
    FROM asked CROSS JOIN LATERAL (${PRIOR_OF("asked.s", "asked.k")}) c
  UNION ALL
  SELECT p.n, true, p.op, p.sync_id, p.key
    FROM ${PENDING} p JOIN asked ON p.sync_id = asked.s AND p.key = asked.k`;
const APPEND = "syncmirror_changes_append";
const APPEND_SQL = `WITH replaced AS (
    DELETE FROM changes WHERE seq = ANY($1::bigint[])
  ), replaced_pending AS (
    DELETE FROM ${PENDING} WHERE n = ANY($7::bigint[])
  )
  INSERT INTO ${PENDING} (key, op, at, mirror, sync_id)
  SELECT k, o, a, m, s
    FROM unnest($2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::text[]) WITH ORDINALITY AS t(k, o, a, m, s, n)
    ORDER BY n`;

/**
 * The end of a statement that records the changes its `wanted` CTE lists (columns k, op and n,
 * their order, and any its caller names in `c`), each replacing its key's change in its scope, its
 * op as `replacingOp` says (`keptOps`: PRIOR_OP_KEPT as data), appended in order. `c` gives each
 * change's scope, time and mirror as SQL over `w`, a wanted row. The priors join assumes one row
 * per (scope, key): a batch that repeats one takes the stepwise path (PRIORS, then APPEND).
 */
const REPLACE_AND_APPEND = (c: { scope: string; at: string; mirror: string; keptOps: string }) => `prior AS (
    SELECT c.seq AS id, false AS pending, c.op, w.n FROM wanted w CROSS JOIN LATERAL (${PRIOR_OF(c.scope, "w.k")}) c
    UNION ALL
    SELECT p.n, true, p.op, w.n FROM wanted w JOIN ${PENDING} p ON p.sync_id = ${c.scope} AND p.key = w.k
  ), replacing AS (
    SELECT w.*, CASE WHEN (p.op || '>' || w.op) = ANY(${c.keptOps}) THEN p.op ELSE w.op END AS kept_op
      FROM wanted w LEFT JOIN prior p ON p.n = w.n
  ), replaced AS (
    DELETE FROM changes WHERE seq IN (SELECT id FROM prior WHERE NOT pending)
  ), replaced_pending AS (
    DELETE FROM ${PENDING} WHERE n IN (SELECT id FROM prior WHERE pending)
  )
  INSERT INTO ${PENDING} (key, op, at, mirror, sync_id)
  SELECT w.k, w.kept_op, ${c.at}, ${c.mirror}, ${c.scope} FROM replacing w ORDER BY w.n`;

// A batch of changes whose (scope, key)s are each their own (revocations: distinct keys of one
// scope) in one statement: one round trip where PRIORS then APPEND took two.
const RECORD_DISTINCT = "syncmirror_changes_record_distinct";
const RECORD_DISTINCT_SQL = `WITH wanted AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::text[])
      WITH ORDINALITY AS t(k, op, a, m, s, n)
  ), ${REPLACE_AND_APPEND({ scope: "w.s", at: "w.a", mirror: "w.m", keptOps: "$6::text[]" })}`;

// A page's sightings in one statement: the access upsert of `access.ts` (SEE_ALL), then a change
// for each row the page wrote or whose user had no access before, in row order. Only for rows
// that are each their own (mirror, user, key): ON CONFLICT and the priors join assume one row per
// key; a page that repeats one takes the stepwise path.
const RECORD_SEEN = "syncmirror_changes_record_seen";
const RECORD_SEEN_SQL = `WITH seen AS (
    INSERT INTO resource_access (mirror, user_email, key, server_instance_id, source, last_seen_at, missed_full_count)
    SELECT m, u, k, s, src, at, 0
      FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[]) AS t(m, u, k, s, src, at)
    ON CONFLICT (mirror, user_email, key) DO UPDATE SET source = excluded.source,
      last_seen_at = GREATEST(resource_access.last_seen_at, excluded.last_seen_at), missed_full_count = 0
    RETURNING mirror, user_email, key, (xmax = 0) AS inserted
  ), wanted AS (
    SELECT t.k, CASE WHEN t.w THEN 'upsert' ELSE 'access' END AS op, t.n
      FROM unnest($1::text[], $2::text[], $3::text[], $7::boolean[]) WITH ORDINALITY AS t(m, u, k, w, n)
      LEFT JOIN seen ON seen.mirror = t.m AND seen.user_email = t.u AND seen.key = t.k
     WHERE t.w OR seen.inserted
  ), ${REPLACE_AND_APPEND({ scope: "$10", at: "$8::timestamptz", mirror: "$9", keptOps: "$11::text[]" })}`;

const scopedId = (scope: string, key: string) => `${scope}\n${key}`;

export function createChangeRepo(
  { client }: Conn,
  onRecorded: () => void,
  access: Pick<AccessRepo, "seeAll">,
): ChangeRepo {
  const repo: ChangeRepo = {
    async recordSeen(rows, written, change) {
      if (rows.length === 0) return;
      const keys = rows.map((r) => pgText(r.key));
      const ids = new Set(rows.map((r, i) => `${r.mirror}\n${r.userEmail}\n${keys[i]}`));
      if (ids.size < rows.length) {
        await repo.recordAll(seenChanges(rows, written, await access.seeAll(rows), change));
        return;
      }
      const { rowCount } = await client.query({
        name: RECORD_SEEN,
        text: RECORD_SEEN_SQL,
        values: [
          rows.map((r) => r.mirror),
          rows.map((r) => r.userEmail),
          keys,
          rows.map((r) => r.serverInstanceId),
          rows.map((r) => r.source),
          rows.map((r) => r.seenAt),
          rows.map((_, i) => written[i] === true),
          change.at,
          change.mirror,
          change.scope,
          PRIOR_OP_KEPT,
        ],
      });
      if ((rowCount ?? 0) > 0) onRecorded();
    },

    async recordAll(changes) {
      if (changes.length === 0) return;
      const keys = changes.map((c) => pgText(c.key));
      if (new Set(changes.map((c, i) => scopedId(c.scope, keys[i] as string))).size === changes.length) {
        await client.query({
          name: RECORD_DISTINCT,
          text: RECORD_DISTINCT_SQL,
          values: [
            keys,
            changes.map((c) => c.op),
            changes.map((c) => c.at),
            changes.map((c) => c.mirror),
            changes.map((c) => c.scope),
            PRIOR_OP_KEPT,
          ],
        });
        onRecorded();
        return;
      }
      const { rows: priors } = await client.query<{
        id: string;
        pending: boolean;
        op: ChangeOp;
        sync_id: string;
        key: string;
      }>({
        name: PRIORS,
        text: PRIORS_SQL,
        values: [changes.map((c) => c.scope), keys],
      });
      // The latest change of each (scope, key) as the batch goes, stored or appended by it.
      const latest = new Map<
        string,
        { op: ChangeOp; stored?: { id: string; pending: boolean }; appendAt?: number }
      >();
      for (const p of priors)
        latest.set(scopedId(p.sync_id, p.key), { op: p.op, stored: { id: p.id, pending: p.pending } });
      const removed: string[] = [];
      const removedPending: string[] = [];
      const appended: ({ index: number; op: ChangeOp } | undefined)[] = [];
      changes.forEach((c, index) => {
        const id = scopedId(c.scope, keys[index] as string);
        const prior = latest.get(id);
        if (prior?.stored !== undefined)
          (prior.stored.pending ? removedPending : removed).push(prior.stored.id);
        // One appended earlier in this batch: it is replaced before it was ever committed.
        if (prior?.appendAt !== undefined) appended[prior.appendAt] = undefined;
        const op = replacingOp(prior?.op, c.op);
        latest.set(id, { op, appendAt: appended.length });
        appended.push({ index, op });
      });
      const kept = appended.filter((a) => a !== undefined);
      const column = <T>(of: (c: ChangeRecord, index: number) => T) =>
        kept.map(({ index }) => of(changes[index] as ChangeRecord, index));
      await client.query({
        name: APPEND,
        text: APPEND_SQL,
        values: [
          removed,
          column((_, index) => keys[index]),
          kept.map((a) => a.op),
          column((c) => c.at),
          column((c) => c.mirror),
          column((c) => c.scope),
          removedPending,
        ],
      });
      onRecorded();
    },
  };
  return repo;
}

/** Any fixed number, the same in every syncmirror: held from publishing a transaction's changes to its COMMIT. */
const PUBLISH_LOCK = 0x5_9c_4d_12;
/** Consumers LISTEN here; the payload is `<mirror>:<last seq>` (docs/scaling-out.md). */
export const CHANGES_CHANNEL = "syncmirror_changes";

/**
 * The transaction's pending changes are copied into `changes`, taking seqs in the order they were
 * recorded (COMMIT empties the pending table), and a NOTIFY per mirror carries its highest; then
 * COMMIT releases the lock: sent together (the client pipelines), one round trip. The server runs
 * them in order, so the copy happens under the lock, and a COMMIT after a failed statement only
 * rolls back: the failure is thrown.
 */
export async function publishAndCommit(client: pg.PoolClient): Promise<void> {
  await Promise.all([
    client.query("SELECT pg_advisory_xact_lock($1)", [PUBLISH_LOCK]),
    client.query(
      `WITH published AS (
       INSERT INTO changes (key, op, at, mirror, sync_id)
       SELECT key, op, at, mirror, sync_id FROM ${PENDING} ORDER BY n
       RETURNING mirror, seq
     )
     SELECT pg_notify('${CHANGES_CHANNEL}', mirror || ':' || max(seq)) FROM published GROUP BY mirror`,
    ),
    client.query("COMMIT"),
  ]);
}
