/**
 * The operator console's domain types (docs/console-history.md): the pass history, open problems
 * and `approve-sweep`, the same whichever dialect holds them. Times are ISO-8601 UTC strings.
 */
import type { Run, Trigger } from "./types.js";

/**
 * An `approve-sweep`: the next full pass that sweeps may apply the sweeps the guard held for
 * `pairs` pairs, up to `upTo` revocations in all (each pair up to what it held).
 */
export interface SweepApproval {
  mirror: string;
  upTo: number;
  pairs: number;
  by: string;
  at: string;
}

/** One error a pass met (the history keeps every attempt's). */
export interface PassError {
  /** Local time it was met. */
  at: string;
  /** Null for a failure of the whole attempt. */
  syncId: string | null;
  userEmail: string | null;
  /** The source label, for a source that did not succeed. */
  source: string | null;
  /** The service's own text where it gave one, else ours. */
  error: string;
  /** `hostname:pid` of the process that met it. */
  replica: string | null;
}

/** A pass as the history shows it: its trigger, what it stored and what its runs add up to. */
export interface PassRecord {
  trigger: Trigger;
  /** The `sync --json` summary written when it settled; null while in flight. */
  summary: unknown;
  /** Runs by upstream status. */
  runs: Record<string, number>;
  /** Sources of runs read to the end, by export status. */
  sources: Record<string, number>;
  rows: Pick<Run, "upserted" | "unchanged" | "rejected" | "keysNew" | "keysChanged">;
  errors: PassError[];
  /** The `approve-sweep` this pass took, with how many revocations it applied on it. */
  sweepApproval: (SweepApproval & { used: number }) | null;
}

/** What `syncmirror problems` lists: the kinds, each a label of `syncmirror_problems`. */
export const PROBLEM_KINDS = [
  "rejected_row",
  "failed_source",
  "incomplete_source",
  "skipped_pair",
  "held_sweep",
  "config_error",
] as const;
export type ProblemKind = (typeof PROBLEM_KINDS)[number];

/** One open problem. The fields that do not apply to its kind are null. */
export interface Problem {
  mirror: string;
  kind: ProblemKind;
  /** Names the thing within the mirror: a later sighting updates the row, a fix deletes it. */
  subject: string;
  userEmail: string | null;
  serverInstanceId: string | null;
  source: string | null;
  syncId: string | null;
  key: string | null;
  reason: string;
  /** How many (revocations a held sweep holds back; resources rejected without a key). */
  count: number | null;
  firstSeenAt: string;
  lastSeenAt: string;
}

/** A sighting: `firstSeenAt` is kept from the first, the rest is the latest. */
export type ProblemSighting = Omit<Problem, "firstSeenAt" | "lastSeenAt"> & { at: string };
