/**
 * Retired mirrors (`MirrorRepo.retired`, `MirrorRepo.forget`), shared by both dialects: plain SQL
 * both accept, each value a bound parameter drizzle renders in the dialect's own style.
 */
import { type SQL, sql } from "drizzle-orm";
import type { RetiredMirror } from "./types.js";

/**
 * Every mirror name in `resource_access` or `mirror_state`. The access names are read by skipping
 * from one name to the next on the primary key (which leads with the mirror): one index probe per
 * mirror, where DISTINCT would read every access row.
 */
export const MIRROR_NAMES = sql.raw(`WITH RECURSIVE names(mirror) AS (
    SELECT min(mirror) FROM resource_access
    UNION ALL
    SELECT (SELECT min(a.mirror) FROM resource_access a WHERE a.mirror > names.mirror)
      FROM names WHERE names.mirror IS NOT NULL
  )
  SELECT mirror FROM names WHERE mirror IS NOT NULL
  UNION
  SELECT mirror FROM mirror_state`);

/** The known names not among `configured`, sorted: the only ones whose access rows are counted. */
export function retiredNames(known: readonly { mirror: string }[], configured: readonly string[]): string[] {
  const kept = new Set(configured);
  return known
    .map((r) => r.mirror)
    .filter((name) => !kept.has(name))
    .sort();
}

/** Distinct users and keys of each of `names` (not empty) that has access rows. */
export function countGranted(names: readonly string[]): SQL {
  const list = sql.join(
    names.map((name) => sql`${name}`),
    sql`, `,
  );
  return sql`SELECT mirror, count(DISTINCT user_email) AS users, count(DISTINCT key) AS keys
    FROM resource_access WHERE mirror IN (${list}) GROUP BY mirror`;
}

/** Each retired name with its counts (a count may come back as text); a name without access rows grants nothing. */
export function withCounts(
  names: readonly string[],
  counts: readonly { mirror: string; users: number | string; keys: number | string }[],
): RetiredMirror[] {
  const byName = new Map(counts.map((c) => [c.mirror, c]));
  return names.map((mirror) => ({
    mirror,
    users: Number(byName.get(mirror)?.users ?? 0),
    keys: Number(byName.get(mirror)?.keys ?? 0),
  }));
}

/** One row when the database holds anything of `mirror` (see `MirrorRepo.known`), none otherwise. */
export function knownMirror(mirror: string): SQL {
  return sql`SELECT 1 AS known WHERE EXISTS (SELECT 1 FROM resource_access WHERE mirror = ${mirror})
    OR EXISTS (SELECT 1 FROM mirror_state WHERE mirror = ${mirror})
    OR EXISTS (SELECT 1 FROM triggers WHERE mirror = ${mirror})`;
}

/**
 * The statements that delete a mirror's own state, to run in this order in one transaction: what
 * hangs off its trigger in flight first, that trigger after (the others find their rows through
 * it). Finished triggers, their runs and errors, approvals a pass took, controls and the lease
 * row stay: the history.
 */
export function forgetStatements(mirror: string): SQL[] {
  const inFlight = sql`SELECT id FROM triggers WHERE mirror = ${mirror} AND state <> 'done'`;
  return [
    sql`DELETE FROM run_sources WHERE sync_id IN (SELECT sync_id FROM runs WHERE trigger_row_id IN (${inFlight}))`,
    sql`DELETE FROM runs WHERE trigger_row_id IN (${inFlight})`,
    sql`DELETE FROM pass_errors WHERE trigger_row_id IN (${inFlight})`,
    sql`DELETE FROM dry_run_seen WHERE trigger_row_id IN (${inFlight})`,
    sql`DELETE FROM dry_run_revoke WHERE trigger_row_id IN (${inFlight})`,
    sql`DELETE FROM sweep_approvals WHERE mirror = ${mirror} AND (trigger_row_id IS NULL OR trigger_row_id IN (${inFlight}))`,
    sql`DELETE FROM triggers WHERE mirror = ${mirror} AND state <> 'done'`,
    ...["pairs", "schedules", "problems", "mirror_state"].map(
      (table) => sql`DELETE FROM ${sql.identifier(table)} WHERE mirror = ${mirror}`,
    ),
  ];
}
