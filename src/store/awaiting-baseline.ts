/**
 * Which pairs await a baseline, shared by both dialects (`PairRepo.countAwaitingBaseline`): marked
 * so, not retired, and not skipped as a user who left the project. A pair whose user left keeps
 * its mark (should the user come back, it needs a baseline), but nothing is awaited for it: the
 * next full pass retires it. A pair that runs again after leaving is marked (`awaitingOnReturn`).
 */
import { type AnyColumn, and, eq, isNull, ne, or, type SQL, sql } from "drizzle-orm";

const LEFT_THE_PROJECT = "not_a_project_user";

export function awaitingBaselineOf(
  pairs: { mirror: AnyColumn; awaitingBaseline: AnyColumn; retiredAt: AnyColumn; skipReason: AnyColumn },
  mirror: string,
): SQL | undefined {
  return and(
    eq(pairs.mirror, mirror),
    eq(pairs.awaitingBaseline, true),
    isNull(pairs.retiredAt),
    or(isNull(pairs.skipReason), ne(pairs.skipReason, LEFT_THE_PROJECT)),
  );
}

/**
 * The mark of a pair that runs again: kept, or set when the pair was retired or its user was
 * skipped as having left the project. Either way it stopped holding `since` back while away, so
 * incremental passes moved past its watermark and what it gained meanwhile waits for a full pass.
 */
export function awaitingOnReturn(pairs: {
  awaitingBaseline: AnyColumn;
  retiredAt: AnyColumn;
  skipReason: AnyColumn;
}): SQL {
  return sql`(${pairs.awaitingBaseline} OR ${pairs.retiredAt} IS NOT NULL OR COALESCE(${pairs.skipReason} = ${LEFT_THE_PROJECT}, FALSE))`;
}
