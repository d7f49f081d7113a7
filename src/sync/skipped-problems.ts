/**
 * Pairs the trigger skipped, as problems (docs/console-history.md), written when the pass settles.
 * A user who left the project (`not_a_project_user`) is not one: that is the project's answer, and
 * the next full pass revokes their access. A complete skipped list (the trigger's response, at most
 * 100 pairs) also clears the skipped pairs it no longer names: they ran (cleared with their last
 * page already) or left the sync config.
 */

import type { ProblemSighting } from "../store/console-types.js";
import type { StoreOps } from "../store/store.js";
import type { SkippedPairRecord, Trigger } from "../store/types.js";
import type { MirrorPass } from "./context.js";
import { skippedListComplete } from "./leavers.js";
import { problemSubject } from "./problem-subject.js";

export async function recordSkippedPairs(
  tx: StoreOps,
  pass: MirrorPass,
  trigger: Pick<Trigger, "skipped" | "skippedCount">,
  at: string,
): Promise<void> {
  const { mirror } = pass;
  const sightings = skippedSightings(pass, trigger.skipped ?? [], at);
  // Issued at once, in this order (one round trip on PostgreSQL): neither needs the other's answer.
  await Promise.all([
    tx.problems.record(sightings),
    skippedListComplete(trigger.skipped, trigger.skippedCount)
      ? tx.problems.clearKindExcept(
          mirror.name,
          "skipped_pair",
          sightings.map((s) => s.subject),
        )
      : undefined,
  ]);
}

/**
 * Skipped pairs the trigger did not list (the access check found them): each pair marked skipped
 * and a problem, as a listed one is when its pass settles.
 */
export async function recordSkips(
  tx: StoreOps,
  pass: MirrorPass,
  skips: readonly SkippedPairRecord[],
  /** `at`: when (this machine's clock), for the problems; `seenAt`: the service's time, for the pairs. */
  { at, seenAt }: { at: string; seenAt: string },
): Promise<void> {
  await Promise.all([
    ...skips.map((s) =>
      tx.pairs.skipped(
        { mirror: pass.mirror.name, userEmail: s.user_email, serverInstanceId: s.server_instance_id },
        { reason: s.reason, authStatus: s.auth_status ?? null, seenAt },
      ),
    ),
    tx.problems.record(skippedSightings(pass, skips, at)),
  ]);
}

function skippedSightings(
  { mirror }: MirrorPass,
  skips: readonly SkippedPairRecord[],
  at: string,
): ProblemSighting[] {
  return skips
    .filter((s) => s.reason !== "not_a_project_user")
    .map((s) => ({
      mirror: mirror.name,
      kind: "skipped_pair",
      subject: problemSubject("skipped", s.user_email, s.server_instance_id),
      userEmail: s.user_email,
      serverInstanceId: s.server_instance_id,
      source: null,
      syncId: null,
      key: null,
      reason: s.auth_status ? `${s.reason} (${s.auth_status})` : s.reason,
      count: null,
      at,
    }));
}
