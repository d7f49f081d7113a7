/**
 * Open problems as `syncmirror problems --json` prints them and `GET /v1/problems` serves them
 * (docs/console-history.md): what each concerns, why, first and last seen. Each clears itself when
 * a later pass shows it fixed (docs/console-history.md). Read-only.
 */

import { PROBLEM_KINDS, type Problem, type ProblemKind } from "../store/console-types.js";
import type { Store } from "../store/store.js";
import { type PendingApprovalJson, pendingApprovals } from "./history.js";
import type { ProblemParams } from "./params.js";

export interface ProblemJson {
  mirror: string;
  kind: ProblemKind;
  /** What it concerns; the fields that do not apply to its kind are null. */
  user_email: string | null;
  server_instance_id: string | null;
  source: string | null;
  sync_id: string | null;
  key: string | null;
  reason: string;
  /** How many: revocations a held sweep holds back; resources rejected without a key. */
  count: number | null;
  first_seen_at: string;
  last_seen_at: string;
}

export interface ProblemsJson {
  /** Open problems by mirror and kind (every kind, 0 included), whatever `limit` left out. */
  counts: Record<string, Record<ProblemKind, number>>;
  problems: ProblemJson[];
  /** More problems are open than `limit` listed. */
  truncated: boolean;
  /** `approve-sweep`s given that the next full pass will use. */
  pending_sweep_approvals: PendingApprovalJson[];
}

export async function buildProblems(
  store: Store,
  mirrors: readonly string[],
  params: ProblemParams,
): Promise<ProblemsJson> {
  const selected = params.mirror ? [params.mirror] : mirrors;
  const counts: ProblemsJson["counts"] = {};
  for (const mirror of selected)
    counts[mirror] = Object.fromEntries(PROBLEM_KINDS.map((k) => [k, 0])) as Record<ProblemKind, number>;
  let open = 0;
  for (const c of await store.problems.countByKind()) {
    const byKind = counts[c.mirror];
    if (!byKind) continue;
    byKind[c.kind] += c.n;
    open += c.n;
  }
  const listed = (await store.problems.list({ mirror: params.mirror, limit: params.limit + 1 })).filter((p) =>
    selected.includes(p.mirror),
  );
  const problems = listed.slice(0, params.limit).map(problemJson);
  return {
    counts,
    problems,
    truncated: open > problems.length,
    pending_sweep_approvals: await pendingApprovals(store, selected),
  };
}

function problemJson(p: Problem): ProblemJson {
  return {
    mirror: p.mirror,
    kind: p.kind,
    user_email: p.userEmail,
    server_instance_id: p.serverInstanceId,
    source: p.source,
    sync_id: p.syncId,
    key: p.key,
    reason: p.reason,
    count: p.count,
    first_seen_at: p.firstSeenAt,
    last_seen_at: p.lastSeenAt,
  };
}
