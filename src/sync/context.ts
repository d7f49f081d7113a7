import type { ApiClient } from "../api/client.js";
import type { MirrorConfig } from "../config.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics.js";
import type { Store } from "../store/store.js";
import type { Fence, LeaseHolder } from "../store/types.js";
import type { PageWindow } from "./page-window.js";

/** Named points where an env-guarded crash seam may kill the process (reliability tests only). */
export type CrashPoint =
  | "before-intent"
  | "after-intent"
  | "after-trigger-post"
  | "row-checked"
  | "mid-page"
  | "between-pages"
  | "before-sweep"
  | "mid-sweep"
  | "between-revocations"
  | "during-continue"
  | "mid-forget"
  | "before-forget-state"
  | "feed-page";

/** Everything one pass needs, passed explicitly. */
export interface SyncContext {
  store: Store;
  api: ApiClient;
  log: Logger;
  metrics: Metrics;
  /** Local clock: timeouts, `fetched`/`at` stamps and the changes feed; never `since`. */
  now: () => Date;
  signal: AbortSignal;
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Called at each crash point; the CLI wires it to SYNCMIRROR_CRASH_AT, elsewhere a no-op. */
  crashPoint: (point: CrashPoint) => void;
  /** Called each polling round (the CLI draws a progress line on a terminal). */
  onProgress?: (progress: Progress) => void;
  /**
   * Trigger POSTs one pass may send (`api.max_attempts`): each one after the first only once the run
   * list shows the one before it created nothing.
   */
  triggerPosts: number;
  /** Runs exported at once per pass (HTTP concurrency; database writes stay serialized). */
  ingestConcurrency: number;
  /** The lease this pass runs under: `syncMirror` fences every write of the pass with it (`fence.ts`). */
  lease?: Fence;
  /**
   * The process running the pass, as the history names it: recorded on the trigger it starts
   * (`started_by`, `started_by_name`) and on each error it meets.
   */
  replica?: LeaseHolder;
  /** Resources asked for per export page (`export.page_size`). */
  exportPageSize: number;
  /** Export pages one run may fetch ahead of the page it needs next (`export.pages_ahead_per_run`). */
  pagesAheadPerRun: number;
  /** This pass's budget of pages fetched ahead across its runs (`export.pages_ahead_per_pass`). */
  pagesAhead: PageWindow;
}

export interface Progress {
  mirror: string;
  runs: number;
  finished: number;
  ingested: number;
  /** Resources read so far (upserted or unchanged). */
  resources: number;
}

export interface PassOptions {
  full: boolean;
  allowMassDelete: boolean;
  dryRun: boolean;
  /**
   * A due pass (scheduled or requested): the due it covers is taken off the mirror's schedule in
   * the transaction that writes the trigger's intent, so a crash either leaves both (the trigger
   * is resumed, the due stays consumed) or neither (the due stays for the next replica).
   */
  servesDue?: boolean;
  /** Finish the trigger left in flight and trigger nothing new, even a full owed after it. */
  resumeOnly?: boolean;
  /**
   * A dry run over several mirrors: the dry-run triggers of the mirrors before this one. The real
   * command sweeps them first, so a key they would revoke the last access to elsewhere is deleted by
   * this mirror's sweep; this dry run counts their revocations as done and adds its own trigger. The
   * caller releases their marks once the command ends; without it, each dry run releases its own.
   */
  dryRunsBefore?: number[];
}

/**
 * A mirror whose remote config id is known: a declared mirror's is what `apply` recorded in the
 * database (`sync-configs/bind.ts`). What a pass runs on.
 */
export type BoundMirror = MirrorConfig & { readonly syncConfigId: string };

export interface MirrorPass {
  mirror: BoundMirror;
  ctx: SyncContext;
  options: PassOptions;
}
