/** Everything the simulated service remembers: configs, runs (each knows its trigger), and the tenant's switches. */
import type { InternalClock } from "./clock.js";
import type { Dataset, ServerRecord } from "./dataset.js";
import type { People } from "./people.js";
import { type Random, randomUuid } from "./random.js";

export type SourceStatus = "PENDING" | "RUNNING" | "COMPLETED" | "INCOMPLETE" | "FAILED";
export type RunStatus = "pending" | "running" | "completed" | "incomplete" | "failed";
export type ExportStatus = "ok" | "no_results" | "authentication_required" | "degraded" | "config_stale";
export type Lifecycle = "on-poll" | "manual";

/** Which sources an outcome applies to; an absent field matches any. */
export interface OutcomeMatch {
  user?: string;
  server_instance_id?: string;
}

/** How matching sources finish. `times` (default: unlimited) counts finishes it applies to. */
export interface Outcome {
  task: "COMPLETED" | "INCOMPLETE" | "FAILED";
  exportStatus?: ExportStatus;
  /** The source's `error` in the run detail (FAILED without one: a default text). */
  error?: string;
  /** INCOMPLETE only: the share of the visible documents collected (default 0.5). */
  includeFraction?: number;
  times?: number;
}

/** What a source collected, fixed when it finished: exported documents only, in key order. */
export interface Snapshot {
  index: Int32Array;
  version: Uint32Array;
  modifiedAt: Float64Array;
  visible: number;
  included: number;
  skippedUnchanged: number;
  contentFetchFailed: number;
  /** A few documents the agent left undecided (INCOMPLETE), for the export's `undecided` list. */
  undecidedSample: number[];
  fetchedAtMs: number;
}

export interface SourceRecord {
  label: string;
  server: ServerRecord;
  taskId: string;
  sessionId: string | null;
  status: SourceStatus;
  startedAtMs: number | null;
  completedAtMs: number | null;
  error: string | null;
  /** Export status forced by an outcome; otherwise derived from what was included. */
  forcedExportStatus: ExportStatus | null;
  snapshot: Snapshot | null;
  /** Each continue: its message, when it came, and when the attempt it resumed had finished. */
  continues: { message: string; atMs: number; finishedAtMs: number }[];
}

export interface RunRecord {
  syncId: string;
  triggerId: string;
  configId: string;
  projectId: string;
  userEmail: string;
  user: number;
  instructions: string;
  since: string | null;
  sinceMs: number | null;
  createdAtMs: number;
  seq: number;
  sources: SourceRecord[];
}

export interface ConfigRecord {
  id: string;
  projectId: string;
  name: string;
  instructions: string;
  serverIds: string[];
  allUsers: boolean;
  userEmails: string[];
  /** Servers paused for this config (`available: false`). */
  unavailable: Set<string>;
  createdAtMs: number;
  updatedAtMs: number;
  seq: number;
}

export interface Project {
  id: string;
  name: string;
  createdAtMs: number;
}

export class SimState {
  readonly configs = new Map<string, ConfigRecord>();
  readonly runs = new Map<string, RunRecord>();
  readonly outcomes: { match: OutcomeMatch; outcome: Outcome; left: number }[] = [];
  premium = true;
  /** The status a create, replace or trigger is refused with while `premium` is off. */
  premiumRefusalStatus: 403 | 409 = 403;
  cannotStart: string | null = null;
  schemaVersion: number | string = 1;
  engineVersion: number | string = 2;
  held = false;
  private seq = 0;

  constructor(
    readonly dataset: Dataset,
    readonly people: People,
    readonly clock: InternalClock,
    private readonly ids: Random,
    readonly project: Project,
    public lifecycle: Lifecycle,
    private readonly passIds: Random = ids,
  ) {}

  newId(): string {
    return randomUuid(this.ids);
  }

  /** An id of a pass's trigger, run, task or session (see `SimulatorOptions.passIdSeed`). */
  newPassId(): string {
    return randomUuid(this.passIds);
  }

  /** Background Sync on or off for the tenant; off, create, replace and trigger answer `refusalStatus`. */
  setPremium(enabled: boolean, refusalStatus: 403 | 409 = 403): void {
    this.premium = enabled;
    this.premiumRefusalStatus = refusalStatus;
  }

  nextSeq(): number {
    return ++this.seq;
  }

  serverById(id: string): ServerRecord | undefined {
    return this.dataset.servers.find((s) => s.server_instance_id === id);
  }

  /** The outcome for a source finishing now; consumes one use of a `times`-limited rule. */
  takeOutcome(run: RunRecord, source: SourceRecord): Outcome | undefined {
    for (let i = this.outcomes.length - 1; i >= 0; i--) {
      const rule = this.outcomes[i];
      if (!rule || rule.left <= 0) continue;
      const { user, server_instance_id } = rule.match;
      if (user !== undefined && user.toLowerCase() !== run.userEmail.toLowerCase()) continue;
      if (server_instance_id !== undefined && server_instance_id !== source.server.server_instance_id)
        continue;
      rule.left -= 1;
      return rule.outcome;
    }
    return undefined;
  }
}

/** Run status from its sources, as docs/reference/upstream-api.md defines it. */
export function runStatusOf(run: RunRecord): RunStatus {
  const statuses = run.sources.map((s) => s.status);
  if (statuses.every((s) => s === "PENDING")) return "pending";
  if (!statuses.every(isFinished)) return "running";
  if (statuses.every((s) => s === "COMPLETED")) return "completed";
  if (statuses.includes("INCOMPLETE")) return "incomplete";
  return "failed";
}

export function isFinished(status: SourceStatus): boolean {
  return status === "COMPLETED" || status === "INCOMPLETE" || status === "FAILED";
}
