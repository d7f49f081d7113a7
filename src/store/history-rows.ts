/**
 * The history's and the problems' rows as domain objects, the same for both dialects once each has
 * read them: a page of passes from its triggers and its runs' totals, and a declared sync config's
 * apply error as a problem (it lives in its record, not in `problems`).
 */

import type { PassError, PassRecord, Problem, SweepApproval } from "./console-types.js";
import { type DecodeJson, toTrigger } from "./rows.js";
import type { Trigger } from "./types.js";

type TriggerColumns = Parameters<typeof toTrigger>[0];

/** One group of a page's runs: a trigger's runs of one status, with their counts summed. */
export interface RunTotals {
  triggerRowId: number;
  status: string;
  n: number;
  upserted: number;
  unchanged: number;
  rejected: number;
  keysNew: number;
  keysChanged: number;
}

/** One group of a page's sources: a trigger's sources (of runs read to the end) of one export status. */
export interface SourceTotals {
  triggerRowId: number;
  status: string;
  n: number;
}

export type PassErrorRow = PassError & { triggerRowId: number };

/** A trigger's taken approval, its pairs' rows summed. */
export type ApprovalTotals = SweepApproval & { triggerRowId: number | null; used: number };

/** The page's passes, in the order of `triggers`, each with its runs' and sources' totals and its errors. */
export function toPassRecords(
  triggers: readonly TriggerColumns[],
  runs: readonly RunTotals[],
  sources: readonly SourceTotals[],
  errors: readonly PassErrorRow[],
  approvals: readonly ApprovalTotals[],
  decode: DecodeJson,
): PassRecord[] {
  return triggers.map((row) => {
    const trigger: Trigger = toTrigger(row, decode);
    const record: PassRecord = {
      trigger,
      summary: decode(row.summary),
      runs: {},
      sources: {},
      rows: { upserted: 0, unchanged: 0, rejected: 0, keysNew: 0, keysChanged: 0 },
      errors: [],
      sweepApproval: null,
    };
    for (const r of runs.filter((r) => r.triggerRowId === trigger.id)) {
      record.runs[r.status] = r.n;
      record.rows.upserted += r.upserted;
      record.rows.unchanged += r.unchanged;
      record.rows.rejected += r.rejected;
      record.rows.keysNew += r.keysNew;
      record.rows.keysChanged += r.keysChanged;
    }
    for (const s of sources.filter((s) => s.triggerRowId === trigger.id)) record.sources[s.status] = s.n;
    record.errors = errors
      .filter((e) => e.triggerRowId === trigger.id)
      .map(({ triggerRowId: _t, ...e }) => e);
    const approval = approvals.find((x) => x.triggerRowId === trigger.id);
    if (approval) {
      const { triggerRowId: _t, ...taken } = approval;
      record.sweepApproval = taken;
    }
    return record;
  });
}

/** The columns of a declared sync config's record that make its apply error a problem. */
export interface ConfigErrorColumns {
  mirror: string;
  name: string | null;
  lastError: string | null;
  lastErrorAt: string | null;
  firstErrorAt: string | null;
}

/** A declared sync config the daemon (or `apply`) could not apply, as a problem of its mirror. */
export function configErrorProblem(c: ConfigErrorColumns): Problem {
  const at = c.lastErrorAt ?? "";
  return {
    mirror: c.mirror,
    kind: "config_error",
    subject: JSON.stringify(["config", c.name]),
    userEmail: null,
    serverInstanceId: null,
    source: null,
    syncId: null,
    key: null,
    reason: `the declared sync config${c.name ? ` "${c.name}"` : ""} could not be applied: ${c.lastError ?? ""}`,
    count: null,
    firstSeenAt: c.firstErrorAt ?? at,
    lastSeenAt: at,
  };
}

/**
 * A pending `sweep_approvals` row counts while its pair's sweep is held (its `held_sweep` problem
 * open): once the sweep applied or the pair was retired it approves nothing, and the next take
 * drops it.
 */
export const HELD_SWEEP_OPEN = `EXISTS (SELECT 1 FROM problems p WHERE p.mirror = sweep_approvals.mirror
  AND p.kind = 'held_sweep' AND p.user_email = sweep_approvals.user_email
  AND p.server_instance_id = sweep_approvals.server_instance_id)`;

/** The pairs an `approve-sweep` covers: each held sweep open as a problem, up to what it held. */
export function heldPairs(
  rows: readonly {
    userEmail: string | null;
    serverInstanceId: string | null;
    count: number | null;
    mirror: string;
  }[],
): { mirror: string; userEmail: string; serverInstanceId: string; upTo: number }[] {
  return rows.flatMap((r) =>
    r.userEmail === null || r.serverInstanceId === null
      ? []
      : [
          {
            mirror: r.mirror,
            userEmail: r.userEmail,
            serverInstanceId: r.serverInstanceId,
            upTo: r.count ?? 0,
          },
        ],
  );
}

/**
 * The ids of the passes the sync logic reads whatever their age (see `HistoryRepo.prune`): each
 * mirror's newest trigger, its newest finished one per mode, and the one holding its newest run.
 */
export const PRUNE_KEPT = `
  SELECT max(id) AS id FROM triggers GROUP BY mirror
  UNION SELECT max(id) FROM triggers WHERE state = 'done' GROUP BY mirror, mode
  UNION SELECT r.trigger_row_id FROM runs r
    JOIN (SELECT mirror, max(created_at) AS newest FROM runs GROUP BY mirror) n
      ON n.mirror = r.mirror AND n.newest = r.created_at`;

/**
 * The ids of finished passes older than the cutoff, oldest first, but those in `kept` (the set
 * `PRUNE_KEPT` gave). Each of a prune's batches scans from the oldest row on, so a first prune of a
 * long history costs in proportion to it, not to its square. `cutoff`, `kept` and `limit` are the
 * dialect's placeholders and set expression.
 */
export function prunableTriggers(cutoff: string, kept: string, limit: string): string {
  return `
  SELECT id FROM triggers
  WHERE state = 'done' AND finished_at < ${cutoff} AND id NOT IN ${kept}
  ORDER BY id LIMIT ${limit}`;
}
