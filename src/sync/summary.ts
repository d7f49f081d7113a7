import type { Mode } from "../store/state.js";
import type { Outcome } from "./outcome.js";

/** One mirror's pass, as `sync --json` prints it and the trigger row keeps it. */
export interface MirrorSummary {
  mirror: string;
  /** `full` whenever no `since` was sent. */
  mode: Mode;
  trigger_id: string | null;
  since: string | null;
  /** The pass finished a trigger a previous pass or process left in flight. */
  resumed: boolean;
  /** The trigger's runs were adopted from the run list after its POST got no response. */
  adopted: boolean;
  /** Runs by upstream run status. */
  runs: Record<string, number>;
  /** Sources by export status (of runs whose export was read). */
  sources: Record<string, number>;
  counts: {
    upserted: number;
    unchanged: number;
    /** Resources refused one by one for not having the documented shape. */
    rejected: number;
    deleted: number;
    access_revoked: number;
    sweeps_held: number;
    held_revocations: number;
  };
  /** Skipped pairs listed by the trigger, by reason. */
  skipped: Record<string, number>;
  /** The trigger's `skipped_count`; null when its runs were adopted and the response is unknown. */
  skipped_total: number | null;
  pairs_awaiting_baseline: number;
  /** Runs whose export could not be read, and why. */
  errors: { sync_id: string; user_email: string; error: string }[];
  outcome: Outcome;
  message: string;
  duration_seconds: number;
  /** Only for `--full --dry-run`: what the sweep would do. */
  dry_run?: { would_revoke: number; would_delete: number };
}
