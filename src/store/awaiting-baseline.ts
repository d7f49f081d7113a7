/**
 * Which pairs await a baseline, shared by both dialects (`PairRepo.countAwaitingBaseline`): marked
 * so, not retired, and not skipped as a user who left the project. A pair whose user left keeps
 * its mark (should the user come back, it needs a baseline), but nothing is awaited for it: the
 * next full pass retires it.
 */
import { type AnyColumn, and, eq, isNull, ne, or, type SQL } from "drizzle-orm";

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
