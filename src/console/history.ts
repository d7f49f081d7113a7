/**
 * The pass history as `syncmirror history --json` prints it and `GET /v1/passes` serves it (docs/console-history.md): one entry per pass (a trigger row), newest first, each with every error it
 * met across its attempts, and the cursor of the next page. Read-only.
 */

import type { PassRecord } from "../store/console-types.js";
import type { Store } from "../store/store.js";
import { type PassErrorJson, passErrorJson } from "../sync/pass-error-json.js";
import type { MirrorSummary } from "../sync/summary.js";
import type { HistoryParams } from "./params.js";

export interface PassJson {
  /** The pass's trigger row id: `before` pages from it. */
  id: number;
  mirror: string;
  mode: string;
  since: string | null;
  trigger_id: string | null;
  /** `in_flight` until the pass settles (a failed attempt may leave it for the next pass to resume). */
  state: "in_flight" | "done";
  /** The process that started it; null for passes recorded before replicas were named. */
  replica: { instance_id: string | null; name: string | null } | null;
  /** The process that settled it (another than `replica` after a takeover); null while in flight. */
  finished_by: { instance_id: string; name: string } | null;
  started_at: string;
  ended_at: string | null;
  /** From start to end, across every attempt; null while in flight. */
  duration_seconds: number | null;
  outcome: string | null;
  message: string | null;
  /** The attempt that settled it resumed a trigger left in flight; null while in flight. */
  resumed: boolean | null;
  adopted: boolean;
  dry_run: boolean;
  /** Distinct keys; `unchanged` is counted when the pass settles (null before). */
  keys: { new: number; changed: number; unchanged: number | null };
  /** Exported rows (upserted, unchanged, rejected) and the sweep's work. */
  counts: {
    upserted: number;
    unchanged: number;
    rejected: number;
    deleted: number;
    revoked: number;
    held: number;
    sweeps_held: number;
  };
  runs: Record<string, number>;
  sources: Record<string, number>;
  skipped: Record<string, number>;
  skipped_total: number | null;
  /**
   * The `approve-sweep` this full pass took: the pairs it covered, the revocations they held in all
   * (`up_to`), how many this pass applied on it, who approved and when.
   */
  sweep_approval: { pairs: number; up_to: number; used: number; by: string; at: string } | null;
  errors: PassErrorJson[];
}

/** An `approve-sweep` no full pass has taken yet. */
export interface PendingApprovalJson {
  mirror: string;
  pairs: number;
  up_to: number;
  by: string;
  at: string;
}

export interface HistoryJson {
  passes: PassJson[];
  /** Pass it as `before` for the next (older) page; null on the last page. */
  next_before: number | null;
  pending_sweep_approvals: PendingApprovalJson[];
}

export async function buildHistory(
  store: Store,
  mirrors: readonly string[],
  params: HistoryParams,
): Promise<HistoryJson> {
  // One more than asked: whether an older page exists, without a count.
  const records = await store.history.list({
    mirror: params.mirror,
    ...(typeof params.before === "object" ? { startedBefore: params.before.at } : { before: params.before }),
    limit: params.limit + 1,
  });
  const page = records.slice(0, params.limit);
  const last = page.at(-1);
  return {
    passes: page.map(passJson),
    next_before: records.length > params.limit && last ? last.trigger.id : null,
    pending_sweep_approvals: await pendingApprovals(store, params.mirror ? [params.mirror] : mirrors),
  };
}

export async function pendingApprovals(
  store: Store,
  mirrors: readonly string[],
): Promise<PendingApprovalJson[]> {
  return (await store.approvals.pending())
    .filter((a) => mirrors.includes(a.mirror))
    .map((a) => ({ mirror: a.mirror, pairs: a.pairs, up_to: a.upTo, by: a.by, at: a.at }));
}

function passJson(r: PassRecord): PassJson {
  const t = r.trigger;
  const a = r.sweepApproval;
  // Written by this program when the pass settled (`sync/settle.ts`).
  const summary = r.summary as Partial<MirrorSummary> | null;
  const done = t.state === "done";
  const skipped: Record<string, number> = {};
  for (const s of t.skipped ?? []) skipped[s.reason] = (skipped[s.reason] ?? 0) + 1;
  return {
    id: t.id,
    mirror: t.mirror,
    mode: t.mode,
    since: t.since,
    trigger_id: t.triggerId,
    state: done ? "done" : "in_flight",
    replica:
      t.startedBy === null && t.startedByName === null
        ? null
        : { instance_id: t.startedBy, name: t.startedByName },
    finished_by: done ? (summary?.finished_by ?? null) : null,
    started_at: t.intentAt,
    ended_at: t.finishedAt,
    duration_seconds:
      t.finishedAt === null ? null : Math.max(0, (Date.parse(t.finishedAt) - Date.parse(t.intentAt)) / 1000),
    outcome: t.outcome,
    message: t.message,
    resumed: done ? (summary?.resumed ?? null) : null,
    adopted: t.adopted,
    dry_run: summary?.dry_run !== undefined,
    keys: { new: r.rows.keysNew, changed: r.rows.keysChanged, unchanged: summary?.keys?.unchanged ?? null },
    counts: {
      upserted: r.rows.upserted,
      unchanged: r.rows.unchanged,
      rejected: r.rows.rejected,
      deleted: t.deleted,
      revoked: t.revoked,
      held: t.held,
      sweeps_held: t.sweepsHeld,
    },
    runs: r.runs,
    sources: r.sources,
    skipped,
    skipped_total: t.skipped === null ? null : t.skippedCount,
    sweep_approval: a === null ? null : { pairs: a.pairs, up_to: a.upTo, used: a.used, by: a.by, at: a.at },
    errors: r.errors.map(passErrorJson),
  };
}
