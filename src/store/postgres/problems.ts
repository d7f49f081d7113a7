/**
 * Open problems (`../store.ts` ProblemRepo) on PostgreSQL. A declared sync config's apply error is
 * read from its record (`managed_sync_configs.last_error`), so it clears itself when an apply
 * succeeds.
 */
import { and, asc, eq, inArray, isNotNull, isNull, lt, notInArray, or, sql } from "drizzle-orm";
import type { ProblemRepo } from "../console-repos.js";
import type { Problem, ProblemKind } from "../console-types.js";
import { configErrorProblem } from "../history-rows.js";
import { p } from "../placeholders.js";
import { type Conn, onFirstUse } from "./connection.js";
import { pgText } from "./pg-values.js";
import { managedSyncConfigs, problems, resourceAccess } from "./schema.js";

export function createProblemRepo({ db }: Conn): ProblemRepo {
  // Each run's last page runs it.
  const clearRows = onFirstUse(() =>
    db
      .delete(problems)
      .where(
        and(
          eq(problems.mirror, p("mirror")),
          eq(problems.userEmail, p("userEmail")),
          eq(problems.kind, "rejected_row"),
          sql`exists (SELECT 1 FROM ${resourceAccess} a WHERE a.mirror = ${problems.mirror}
              AND a.user_email = ${problems.userEmail} AND a.key = ${problems.key}
              AND a.last_seen_at >= ${p("since")}::timestamptz)`,
        ),
      )
      .prepare("syncmirror_problems_clear_rows_seen"),
  );
  const configErrors = async (mirror: string | undefined) =>
    (
      await db
        .select()
        .from(managedSyncConfigs)
        .where(
          and(
            isNotNull(managedSyncConfigs.lastError),
            mirror === undefined ? undefined : eq(managedSyncConfigs.mirror, mirror),
          ),
        )
        .orderBy(asc(managedSyncConfigs.mirror))
    ).map(configErrorProblem);
  return {
    async record(sightings) {
      // One statement may not update a row twice: the last sighting of a subject wins, as one call
      // each would leave it.
      const latest = new Map(sightings.map((s) => [`${s.mirror}\n${s.subject}`, s]));
      if (latest.size === 0) return;
      await db
        .insert(problems)
        .values(
          [...latest.values()].map(({ at, ...p }) => ({
            ...p,
            key: p.key === null ? null : pgText(p.key),
            reason: pgText(p.reason),
            firstSeenAt: at,
            lastSeenAt: at,
          })),
        )
        .onConflictDoUpdate({
          target: [problems.mirror, problems.subject],
          set: {
            kind: sql`excluded.kind`,
            userEmail: sql`excluded.user_email`,
            serverInstanceId: sql`excluded.server_instance_id`,
            source: sql`excluded.source`,
            syncId: sql`excluded.sync_id`,
            key: sql`excluded.key`,
            reason: sql`excluded.reason`,
            count: sql`excluded.count`,
            lastSeenAt: sql`excluded.last_seen_at`,
          },
        });
    },

    async clearPair(pair, kinds) {
      await db
        .delete(problems)
        .where(
          and(
            eq(problems.mirror, pair.mirror),
            eq(problems.userEmail, pair.userEmail),
            or(eq(problems.serverInstanceId, pair.serverInstanceId), isNull(problems.serverInstanceId)),
            inArray(problems.kind, [...kinds]),
          ),
        );
    },

    async clearRowsSeen(mirror, userEmail, since) {
      await clearRows().execute({ mirror, userEmail, since });
    },

    async clearKindExcept(mirror, kind, keep) {
      await db
        .delete(problems)
        .where(
          and(eq(problems.mirror, mirror), eq(problems.kind, kind), notInArray(problems.subject, [...keep])),
        );
    },

    async list({ mirror, limit }) {
      const stored = (await db
        .select()
        .from(problems)
        .where(mirror === undefined ? undefined : eq(problems.mirror, mirror))
        .orderBy(asc(problems.mirror), asc(problems.kind), asc(problems.subject))
        .limit(limit)) as Problem[];
      return [...(await configErrors(mirror)), ...stored].slice(0, limit);
    },

    async countByKind() {
      const stored = (await db
        .select({ mirror: problems.mirror, kind: problems.kind, n: sql<number>`count(*)::int` })
        .from(problems)
        .groupBy(problems.mirror, problems.kind)) as { mirror: string; kind: ProblemKind; n: number }[];
      const configs = await configErrors(undefined);
      return [...stored, ...configs.map((p) => ({ mirror: p.mirror, kind: p.kind, n: 1 }))];
    },

    async pruneStale(lastSeenBefore) {
      const deleted = await db
        .delete(problems)
        .where(lt(problems.lastSeenAt, lastSeenBefore))
        .returning({ m: problems.mirror });
      return deleted.length;
    },
  };
}
