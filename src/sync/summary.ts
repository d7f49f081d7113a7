import type { DryRunTotals } from "../store/store.js";
import type { Mode } from "../store/types.js";
import type { Outcome } from "./outcome.js";
import type { PassErrorJson } from "./pass-error-json.js";

/** One mirror's pass, as `sync --json` prints it and the trigger row keeps it. */
export interface MirrorSummary {
  mirror: string;
  /** `full` whenever no `since` was sent. */
  mode: Mode;
  trigger_id: string | null;
  since: string | null;
  /** The pass finished a trigger a previous pass or process left in flight. */
  resumed: boolean;
  /**
   * The process that settled the pass: after a takeover, not the one that started it. Null while
   * the trigger stays in flight, and for a process that runs without a lease holder.
   */
  finished_by: { instance_id: string; name: string } | null;
  /** The trigger's runs were adopted from the run list after its POST got no response. */
  adopted: boolean;
  /** Runs by upstream run status. */
  runs: Record<string, number>;
  /** Sources by export status (of runs whose export was read). */
  sources: Record<string, number>;
  /**
   * Distinct keys this pass ingested: `new` (never in the mirror before), `changed` (content hash
   * changed, or back from a tombstone), `unchanged` (as stored).
   */
  keys: { new: number; changed: number; unchanged: number };
  /** Exported rows (a key seen by k users is k rows), and the sweep's work. */
  counts: {
    upserted: number;
    unchanged: number;
    /** Resources refused one by one for not having the documented shape. */
    rejected: number;
    deleted: number;
    access_revoked: number;
    sweeps_held: number;
    /** Keys whose revocation the held sweeps hold back, each once however many users would lose it. */
    held_revocations: number;
  };
  /** Skipped pairs listed by the trigger, by reason. */
  skipped: Record<string, number>;
  /**
   * The trigger's `skipped_count`; null when its skipped list is unknown: no answer (refused, or
   * the pass never started), runs adopted, or an answer without it.
   */
  skipped_total: number | null;
  pairs_awaiting_baseline: number;
  /**
   * Every error the pass met, across its attempts, as its entry in the history lists them: the
   * history is where they are kept, so a script sees the same errors from either.
   */
  errors: PassErrorJson[];
  outcome: Outcome;
  message: string;
  duration_seconds: number;
  /** Only for `--full --dry-run`: what the sweep would do. */
  dry_run?: DryRunReport;
  /**
   * Only when a full pass first finished the incremental left in flight: that pass, which history
   * keeps as an entry of its own. The outcome and exit code are the full pass's.
   */
  finished_first?: Pick<MirrorSummary, "mode" | "trigger_id" | "outcome" | "message">;
}

/**
 * What a full pass's sweep would do (`sync --full --dry-run`): the totals, the first access rows
 * and keys of each (`DRY_RUN_LIST_LIMIT`), and the pairs whose sweep the mass-delete guard would
 * hold (left out of the totals, as the real pass revokes nothing of them).
 */
export type DryRunReport = DryRunTotals & {
  held_sweeps: {
    user_email: string;
    server_instance_id: string;
    /** The access rows the pair's sweep would revoke. */
    would_revoke: number;
    /** The access rows the pair holds now. */
    pair_keys: number;
  }[];
};

/** A summary with nothing counted yet, for a pass of `mirror` in `mode`. */
export function emptySummary(mirror: string, mode: Mode): MirrorSummary {
  return {
    mirror,
    mode,
    trigger_id: null,
    since: null,
    resumed: false,
    finished_by: null,
    adopted: false,
    runs: {},
    sources: {},
    keys: { new: 0, changed: 0, unchanged: 0 },
    counts: {
      upserted: 0,
      unchanged: 0,
      rejected: 0,
      deleted: 0,
      access_revoked: 0,
      sweeps_held: 0,
      held_revocations: 0,
    },
    skipped: {},
    skipped_total: null,
    pairs_awaiting_baseline: 0,
    errors: [],
    outcome: "failed",
    message: "",
    duration_seconds: 0,
  };
}

/** Why the pass did not run: another process holds the mirror's lease (docs/scaling-out.md). */
export function leaseBusyMessage(holder: string | null): string {
  return `another syncmirror process (${holder ?? "unknown"}) is running this mirror's pass; nothing was done: run sync again once it finishes`;
}

/**
 * The pass could not start (another process runs it, a declared sync config never applied):
 * `failed`, with the reason as its error.
 */
export function notStartedSummary(mirror: string, mode: Mode, error: PassErrorJson): MirrorSummary {
  return { ...emptySummary(mirror, mode), message: error.error, errors: [error] };
}
