/**
 * Open problems (`../store.ts` ProblemRepo) on SQLite. A declared sync config's apply error is read
 * from its record (`managed_sync_configs.last_error`), so it clears itself when an apply succeeds.
 */
import { and, asc, count, eq, inArray, isNotNull, isNull, lt, notInArray, or, sql } from "drizzle-orm";
import type { ProblemRepo } from "../console-repos.js";
import type { Problem, ProblemKind } from "../console-types.js";
import { configErrorProblem } from "../history-rows.js";
import type { Db } from "./open.js";
import { managedSyncConfigs, problems, resourceAccess } from "./schema.js";
import type { Sync } from "./sync-repo.js";

export function createProblemRepo(db: Db): Sync<ProblemRepo> {
  const configErrors = (mirror: string | undefined) =>
    db
      .select()
      .from(managedSyncConfigs)
      .where(
        and(
          isNotNull(managedSyncConfigs.lastError),
          mirror === undefined ? undefined : eq(managedSyncConfigs.mirror, mirror),
        ),
      )
      .orderBy(asc(managedSyncConfigs.mirror))
      .all()
      .map(configErrorProblem);
  return {
    record(sightings) {
      for (const { at, ...p } of sightings) {
        const latest = { ...p, lastSeenAt: at };
        db.insert(problems)
          .values({ ...latest, firstSeenAt: at })
          .onConflictDoUpdate({ target: [problems.mirror, problems.subject], set: latest })
          .run();
      }
    },

    clearPair(pair, kinds) {
      db.delete(problems)
        .where(
          and(
            eq(problems.mirror, pair.mirror),
            eq(problems.userEmail, pair.userEmail),
            or(eq(problems.serverInstanceId, pair.serverInstanceId), isNull(problems.serverInstanceId)),
            inArray(problems.kind, [...kinds]),
          ),
        )
        .run();
    },

    clearRowsSeen(mirror, userEmail, since) {
      db.delete(problems)
        .where(
          and(
            eq(problems.mirror, mirror),
            eq(problems.userEmail, userEmail),
            eq(problems.kind, "rejected_row"),
            sql`exists (SELECT 1 FROM ${resourceAccess} a WHERE a.mirror = ${problems.mirror}
              AND a.user_email = ${problems.userEmail} AND a.key = ${problems.key} AND a.last_seen_at >= ${since})`,
          ),
        )
        .run();
    },

    clearKindExcept(mirror, kind, keep) {
      db.delete(problems)
        .where(
          and(eq(problems.mirror, mirror), eq(problems.kind, kind), notInArray(problems.subject, [...keep])),
        )
        .run();
    },

    list({ mirror, limit }) {
      const stored = db
        .select()
        .from(problems)
        .where(mirror === undefined ? undefined : eq(problems.mirror, mirror))
        .orderBy(asc(problems.mirror), asc(problems.kind), asc(problems.subject))
        .limit(limit)
        .all() as Problem[];
      return [...configErrors(mirror), ...stored].slice(0, limit);
    },

    countByKind() {
      const stored = db
        .select({ mirror: problems.mirror, kind: problems.kind, n: count() })
        .from(problems)
        .groupBy(problems.mirror, problems.kind)
        .all() as { mirror: string; kind: ProblemKind; n: number }[];
      return [...stored, ...configErrors(undefined).map((p) => ({ mirror: p.mirror, kind: p.kind, n: 1 }))];
    },

    pruneStale(lastSeenBefore) {
      return db.delete(problems).where(lt(problems.lastSeenAt, lastSeenBefore)).run().changes;
    },
  };
}
