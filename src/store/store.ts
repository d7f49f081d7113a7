/**
 * The one interface the code above `store/` sees (docs/reference/database.md, docs/scaling-out.md). The store runtime
 * (`store-runtime.ts`) implements it over a dialect's driver (`sqlite/`, `postgres/`);
 * `open-store.ts` picks the driver from the config, and nothing outside `store/` knows which.
 *
 * Every method is async. A transaction is `store.transaction(async (tx) => ...)`: everything done
 * through `tx` commits or rolls back together. Work done through the store itself while a
 * transaction runs in the same async context joins that transaction (so a helper handed the
 * store instead of `tx` neither deadlocks nor escapes it), but callers pass `tx` explicitly.
 *
 * Errors: whatever the database does wrong (a driver error, a row that vanished) is raised as
 * DatabaseError (`isDatabaseError`), whose message says what to do; other errors are the caller's.
 */
import { DatabaseError, DatabaseUnavailableError } from "../errors.js";
import type { HistoryRepo, ProblemRepo, SweepApprovalRepo } from "./console-repos.js";
import type { FeedPage, FeedQuery, SearchHit, SearchQuery, SearchSettingApplied } from "./consumer-types.js";
import type { SyncConfigRepo } from "./managed-sync-configs.js";
import type {
  ActiveTrigger,
  ChangeOp,
  ChangeRecord,
  ControlAction,
  ControlRecord,
  DueReason,
  Fence,
  Lease,
  LeaseGrant,
  LeaseHolder,
  MirrorSchedule,
  MirrorState,
  Mode,
  NewRun,
  PageCounts,
  Pair,
  PairRef,
  PendingContinue,
  Replica,
  ResourceWrite,
  RetiredMirror,
  Run,
  RunSource,
  SeenRow,
  SkippedPairRecord,
  SourceReport,
  StoredResourceState,
  Trigger,
} from "./types.js";

export interface ResourceRepo {
  findState(key: string): Promise<StoredResourceState | undefined>;
  /** The stored state of each of `keys` that has a row: one round trip for a page on PostgreSQL. */
  findStates(keys: readonly string[]): Promise<Map<string, StoredResourceState>>;
  /**
   * Writes each resource (new, changed, or back from a tombstone) as one call (a page's writes: one
   * round trip on PostgreSQL); a key written twice keeps its last write, as one call each would.
   */
  writeAll(rows: readonly ResourceWrite[], engineVersion: string | null, at: string): Promise<void>;
  /** Keeps each key's row as a tombstone: `deleted_at` set, content and JSON parts cleared. */
  tombstoneAll(keys: readonly string[], at: string): Promise<void>;
  /**
   * Called by a page's transaction before it reads the states of the keys it sees: waits for a
   * transaction of another process deciding tombstones (`lockTombstones`) to end, and makes the
   * next one wait for this transaction. Otherwise another mirror's sweep could tombstone a key
   * this page grants access to, each transaction blind to the other's uncommitted rows.
   */
  holdOffTombstones(): Promise<void>;
  /** Called by a transaction before it decides which revoked keys nobody can see any more. */
  lockTombstones(): Promise<void>;
}

export interface AccessRepo {
  /**
   * Records that each user saw each key, in order, as one call (a page's rows: one round trip on
   * PostgreSQL): for each row, true when that user had no access to the key before (a row repeated
   * later in the batch: false).
   */
  seeAll(rows: readonly SeenRow[]): Promise<boolean[]>;
  /** Those of `keys` that some user may still see, through any mirror. */
  keysWithAccess(keys: readonly string[]): Promise<Set<string>>;
  countPairKeys(pair: PairRef): Promise<number>;
  /** Keys the pair holds that a snapshot created at `snapshotAt` did not see and that reach `threshold` misses. */
  countRevocable(pair: PairRef, snapshotAt: string, threshold: number): Promise<number>;
  /**
   * `countRevocable` of each pair, with its own snapshot, in order: one statement on PostgreSQL,
   * where a batch of runs would take one per pair.
   */
  countRevocableEach(
    pairs: readonly { pair: PairRef; snapshotAt: string }[],
    threshold: number,
  ): Promise<number[]>;
  /**
   * The distinct keys `countRevocable` counts over all the pairs, each with its own snapshot: a key
   * several users would lose counts once (`syncmirror_held_revocations` counts keys, not rows).
   */
  countRevocableKeys(
    pairs: readonly { pair: PairRef; snapshotAt: string }[],
    threshold: number,
  ): Promise<number>;
  /**
   * One more miss for every key the snapshot did not see, and those reaching `threshold` revoked:
   * at most `limit` of them a call, so memory holds a batch, never a pair's every key. Called
   * until it returns fewer than `limit` keys, each call in a transaction of its own if need be (a
   * key left below the threshold is not taken by a later call); that last call counts the miss of
   * the keys left (they can reach the threshold only at the next snapshot).
   */
  sweepMissed(pair: PairRef, snapshotAt: string, threshold: number, limit: number): Promise<string[]>;
  /**
   * Removes at most `limit` of the keys the pair holds (user left, pair removed or past its grace)
   * and returns them: called until it returns fewer than `limit`, it removes them all.
   */
  revokePair(pair: PairRef, limit: number): Promise<string[]>;
  /** Distinct (user, server) pairs holding access through the mirror. */
  pairsWithAccess(mirror: string): Promise<PairRef[]>;
  /** Live resources visible through the mirror (the `syncmirror_resources` gauge). */
  countLive(mirror: string): Promise<number>;
  /** Distinct keys the pairs were seen holding by runs created at or after `since`. */
  countKeysSeenSince(pairs: readonly PairRef[], since: string): Promise<number>;
}

export interface ChangeRepo {
  /**
   * Appends each change, in order, as one call (a page's changes: one round trip on PostgreSQL).
   * At most one change per key per run ingested: a key that already changed within its `scope`
   * has that change replaced by this one, appended anew (`change-rule.ts`), so a consumer that
   * already read the earlier seq meets the key again.
   */
  recordAll(changes: readonly ChangeRecord[]): Promise<void>;
  /**
   * A page's sightings: `access.seeAll(rows)`, then `recordAll` of one change per row, all in
   * `change`'s scope: `upsert` for a row whose resource the page wrote (`written[i]`), `access` for
   * one whose user had no access before (`seenChanges`). One statement on PostgreSQL.
   */
  recordSeen(
    rows: readonly SeenRow[],
    written: readonly boolean[],
    change: Omit<ChangeRecord, "key" | "op">,
  ): Promise<void>;
}

export interface PairRepo {
  /** The pair ran in a trigger: it is neither skipped nor retired any more. */
  ran(p: PairRef, runCreatedAt: string): Promise<void>;
  /** The pair's source succeeded in a run created at `runCreatedAt` (server clock). */
  succeeded(p: PairRef, runCreatedAt: string, full: boolean): Promise<void>;
  skipped(p: PairRef, s: { reason: string; authStatus: string | null; seenAt: string }): Promise<void>;
  retire(p: PairRef, reason: string, at: string): Promise<void>;
  /** Too far behind the mirror's newest watermark: no longer holds `since` back. */
  markAwaitingBaseline(p: PairRef): Promise<void>;
  listForMirror(mirror: string): Promise<Pair[]>;
  countAwaitingBaseline(mirror: string): Promise<number>;
}

export interface TriggerRepo {
  findInFlight(mirror: string): Promise<Trigger | undefined>;
  get(id: number): Promise<Trigger>;
  /**
   * The newest settled trigger; with `answered`, the newest whose response was read (its skipped
   * list known): not one refused or failed before an answer, nor one whose runs were adopted.
   */
  lastFinished(mirror: string, options?: { answered?: boolean }): Promise<Trigger | undefined>;
  /** When the newest pass of one of `modes` was started (its intent), if any. */
  lastIntentAt(mirror: string, modes: readonly Mode[]): Promise<string | undefined>;
  /**
   * Written before the POST so that a crash between the two leaves something to adopt from. A due
   * pass writes it in the transaction that takes the due off the schedule (`sync/trigger.ts`).
   */
  createIntent(t: {
    mirror: string;
    mode: Mode;
    since: string | null;
    knownBefore: string | null;
    intentAt: string;
    allowMassDelete: boolean;
    dryRun: boolean;
    startedBy: string | null;
    startedByName: string | null;
    dueAt: string | null;
    dueReason: DueReason | null;
  }): Promise<Trigger>;
  /** The trigger's runs are known (from the POST response or adopted from the run list). */
  activate(
    id: number,
    t: {
      triggerId: string;
      skipped: SkippedPairRecord[] | null;
      skippedCount: number;
      adopted: boolean;
      startedAt: string;
    },
  ): Promise<ActiveTrigger>;
  setMassDeleteAllowed(id: number, allow: boolean): Promise<void>;
  addSweepCounts(id: number, c: { deleted?: number; revoked?: number; sweepsHeld?: number }): Promise<void>;
  /** The keys whose revocation the trigger's held sweeps hold back, counted over all of them. */
  setHeldKeys(id: number, keys: number): Promise<void>;
  markLeaversSwept(id: number, leaversUnknown: boolean): Promise<void>;
  finish(
    id: number,
    f: { outcome: string; message: string; summary: unknown; finishedAt: string },
  ): Promise<void>;
}

export interface RunRepo {
  /** Newest server `created_at` among the mirror's known runs: adoption only takes runs after it. */
  newestCreatedAt(mirror: string): Promise<string | null>;
  isKnown(syncId: string): Promise<boolean>;
  /** Records runs not known yet; known ones are left as they are. */
  insertMany(triggerRowId: number, mirror: string, runs: readonly NewRun[]): Promise<void>;
  ofTrigger(triggerRowId: number): Promise<Run[]>;
  get(syncId: string): Promise<Run>;
  updateStatus(syncId: string, status: string, createdAt: string | null): Promise<void>;
  setIngest(syncId: string, ingest: Run["ingest"], error?: string | null): Promise<void>;
  /**
   * Counted before the POST, with what the sources looked like (`pending`), so a crash or a lost
   * answer in between is settled by reading the run: never one continue too many, nor one too few.
   */
  countContinue(syncId: string, pending: PendingContinue): Promise<void>;
  /** The continue was answered (or is known to have arrived): nothing is pending. */
  clearContinuePending(syncId: string): Promise<void>;
  saveFirstPage(
    syncId: string,
    p: { schemaVersion: string; engineVersion: string | null; diagnostics: unknown; sources: SourceReport[] },
  ): Promise<void>;
  /** The checkpoint: written in the same transaction as the page it follows. */
  checkpoint(syncId: string, nextOffset: number | null, c: PageCounts): Promise<void>;
  sourcesOf(syncId: string): Promise<RunSource[]>;
  /**
   * The sources of every run of the trigger, by sync id (a run without any has no entry), each
   * run's by label: one statement, where `sourcesOf` per run would take one each.
   */
  sourcesOfTrigger(triggerRowId: number): Promise<Map<string, RunSource[]>>;
  markSwept(syncId: string, source: string, swept: "applying" | "applied" | "held"): Promise<void>;
}

export interface MirrorRepo {
  /**
   * The mirror's row, created if missing, naming `syncConfigId`: when it named another config, the
   * state it holds was collected from that one and the mirror owes a full pass (`full-owed.ts`).
   */
  ensure(mirror: string, syncConfigId: string): Promise<MirrorState>;
  get(mirror: string): Promise<MirrorState | undefined>;
  /** A full pass of trigger row `triggerRowId` succeeded: a full owed since before that trigger is paid. */
  fullSucceeded(mirror: string, triggerRowId: number): Promise<void>;
  recordOutcome(
    mirror: string,
    o: { mode: Mode; outcome: string; message: string; at: string; heldRevocations?: number },
  ): Promise<void>;
  /**
   * The mirrors the database knows that are not among `configured`, by name. Cheap when there are
   * none: the mirror names are read one index probe each, and only a retired mirror's rows counted.
   */
  retired(configured: readonly string[]): Promise<RetiredMirror[]>;
  /**
   * Whether the database holds anything of `mirror`: access rows, its state, or a pass in the
   * history (kept by `forget`). One index probe per table.
   */
  known(mirror: string): Promise<boolean>;
  /**
   * Deletes the mirror's own state: its `mirror_state` row, pairs, schedule (pause, pass due), open
   * problems, pending sweep approvals, and the trigger in flight with its runs. Its finished passes,
   * operators' controls and lease row stay (the history). Its access must be revoked first.
   */
  forget(mirror: string): Promise<void>;
}

/**
 * `sync --full --dry-run`'s scratch space: the keys each user saw, compared with
 * `resource_access`, keyed by the trigger so concurrent dry runs never mix.
 */
export interface DryRunRepo {
  seen(triggerRowId: number, userEmail: string, keys: readonly string[]): Promise<void>;
  /**
   * Marks the pair's unseen keys that would reach the miss threshold; how many it marked (what the
   * pair's sweep would revoke, for the mass-delete guard).
   */
  collectPair(triggerRowId: number, p: PairRef & { threshold: number }): Promise<number>;
  /** Unmarks the pair's keys: the mass-delete guard would hold its sweep, so nothing of it is revoked. */
  forgetPair(triggerRowId: number, p: PairRef): Promise<void>;
  /** Marks every key the pair holds (a user who left, a pair removed or past its grace). */
  collectWholePair(triggerRowId: number, p: PairRef): Promise<void>;
  /**
   * What the marks add up to, with the first `limit` access rows (by user, then key) and keys (by
   * key) of each list, so a million-row mirror never loads them all. The marks of the `before`
   * triggers count as revoked already when deciding which keys lose their last access. The keys
   * seen are removed; the marks stay until `release`.
   */
  totals(triggerRowId: number, limit: number, before: readonly number[]): Promise<DryRunTotals>;
  /** Removes the triggers' marks. */
  release(triggerRowIds: readonly number[]): Promise<void>;
}

/** What a full snapshot's sweep would revoke and delete (`sync --full --dry-run`). */
export interface DryRunTotals {
  would_revoke: number;
  would_delete: number;
  /** The first access rows it would revoke, by user then key; `revoke_truncated` when there are more. */
  revoke: { user_email: string; key: string }[];
  revoke_truncated: boolean;
  /** The first keys it would delete, by key; `delete_truncated` when there are more. */
  delete: string[];
  delete_truncated: boolean;
}

/**
 * Coordination between replicas (docs/scaling-out.md). A lease on a mirror says which process may run
 * its pass, and its epoch fences the pass (docs/scaling-out.md#fencing). Expiry is judged by the database's
 * clock, so replicas whose clocks differ still agree.
 */
export interface LeaseRepo {
  /**
   * Takes the lease for `ttlSeconds` if it is free, released, expired, or `replacing`'s (a holder id
   * the caller knows is dead); null when another holder has it. Taking it from anyone (or after it
   * was released or expired) increments its epoch; a holder asking again for the lease it still
   * holds keeps the epoch.
   */
  acquire(
    mirror: string,
    holder: LeaseHolder,
    ttlSeconds: number,
    replacing?: string,
  ): Promise<LeaseGrant | null>;
  /** Extends the lease only while `fence` still holds it unexpired; false when it is gone (never re-taken). */
  renew(fence: Fence, ttlSeconds: number): Promise<boolean>;
  /**
   * True while `fence` holds the lease unexpired. Inside a transaction (every write of a pass) it
   * also keeps the lease from changing hands until that transaction ends (PostgreSQL: a share lock
   * on the lease row), so a takeover is ordered after any commit the old holder was making.
   */
  isHeld(fence: Fence): Promise<boolean>;
  /** Gives the lease up, if `fence` still holds it: the next holder takes it without a takeover. */
  release(fence: Fence): Promise<void>;
  /** Unexpired, unreleased leases by mirror. */
  holders(): Promise<Map<string, Lease>>;
}

/**
 * Each mirror's schedule, shared by every replica (docs/scaling-out.md#scheduling). Its rules are
 * `schedule-rules.ts`: a caller reads the row with `lock` inside a transaction, applies a rule and
 * `save`s the result, so two replicas recording the same time, or a tick racing a pass's intent,
 * are ordered by the row lock (PostgreSQL `FOR UPDATE`; SQLite's writer lock).
 */
export interface ScheduleRepo {
  find(mirror: string): Promise<MirrorSchedule | undefined>;
  list(): Promise<MirrorSchedule[]>;
  /** `find`, keeping the row from other writers until the transaction ends. */
  lock(mirror: string): Promise<MirrorSchedule | undefined>;
  /** Writes the row, creating it when missing. */
  save(schedule: MirrorSchedule): Promise<void>;
}

/** The daemons alive on this database, each by its heartbeat (`status`, and whether `trigger` runs a pass itself). */
export interface ReplicaRepo {
  /** This daemon is alive for `ttlSeconds` more (database clock); rows long expired are pruned. */
  beat(
    r: Pick<Replica, "instanceId" | "name" | "scope" | "startedAt" | "slots" | "running">,
    ttlSeconds: number,
  ): Promise<void>;
  /** A daemon that stops cleanly leaves at once. */
  leave(instanceId: string): Promise<void>;
  /** Daemons whose heartbeat has not expired, oldest first. */
  live(): Promise<Replica[]>;
}

/** Operators' controls, kept for the history. */
export interface ControlRepo {
  record(c: {
    mirror: string;
    action: ControlAction;
    mode: Mode | null;
    actor: string;
    at: string;
  }): Promise<void>;
  /** Newest first. */
  list(q: { mirror?: string; limit: number }): Promise<ControlRecord[]>;
}

/** What can be done inside a transaction (and, one statement at a time, outside one). */
export interface StoreOps {
  resources: ResourceRepo;
  access: AccessRepo;
  changes: ChangeRepo;
  pairs: PairRepo;
  triggers: TriggerRepo;
  runs: RunRepo;
  mirrors: MirrorRepo;
  dryRun: DryRunRepo;
  leases: LeaseRepo;
  syncConfigs: SyncConfigRepo;
  schedules: ScheduleRepo;
  replicas: ReplicaRepo;
  controls: ControlRepo;
  history: HistoryRepo;
  problems: ProblemRepo;
  approvals: SweepApprovalRepo;
}

/** The change feed as consumers read it: one consistent snapshot per page. */
export interface FeedReader {
  readChanges(q: FeedQuery): Promise<FeedPage>;
  /**
   * Resolves once the feed may hold something new: after a commit that recorded changes, by this
   * process or another (told by the database, or seen by a cheap periodic look), or when `signal`
   * aborts. Call it before reading, so a commit landing during the read still wakes the wait.
   */
  waitForChange(signal: AbortSignal): Promise<void>;
}

/**
 * ACL-aware full-text search. Access is checked when querying (live rows the user holds through
 * `resource_access`), never copied into the index, so a revoke or delete shows at once.
 */
export interface SearchIndex {
  /** `search.enabled`: builds the index when absent, drops it when disabled, so off costs nothing. */
  apply(enabled: boolean): Promise<SearchSettingApplied>;
  /**
   * Rebuilds the index from the live resources (builds it when absent); searches meanwhile read
   * the old one. SQLite: in one transaction, writers wait. PostgreSQL: beside the index in use
   * (REINDEX CONCURRENTLY), nobody waits; what a rebuild cut short left is dropped first.
   */
  rebuild(): Promise<{ indexed: number }>;
  /** The user's live matches, best first; SearchQueryError for bad syntax, SearchUnavailableError without an index. */
  query(q: SearchQuery): Promise<SearchHit[]>;
}

/** What the mirror holds, for `demo`. */
export interface StoreContents {
  live: number;
  tombstones: number;
  /** Changes in the feed by op. */
  changes: Partial<Record<ChangeOp, number>>;
}

/**
 * The store outside a transaction. Changes are recorded only inside one (`tx.changes`): the
 * commit listeners follow the commit that recorded them.
 */
export interface Store extends Omit<StoreOps, "changes"> {
  readonly feed: FeedReader;
  readonly search: SearchIndex;
  /**
   * Runs `fn` in one transaction. When another writer gets in the way (a deadlock or
   * serialization failure on PostgreSQL, a busy database on SQLite) it is rolled back and run
   * again from the start, up to 4 times: `fn` does database work only and returns what happened;
   * HTTP, metrics and logs belong to the caller, after the commit.
   */
  transaction<T>(fn: (tx: StoreOps) => Promise<T>): Promise<T>;
  /** Called after each committed transaction that recorded a change (wakes change-feed waiters). */
  onCommit(listener: () => void): () => void;
  countContents(): Promise<StoreContents>;
  /** Throws when the database cannot be reached (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * An error of the database itself, not of the export (disk full, read-only, connection lost): the
 * pass stops with its trigger in flight rather than blaming the run or the upstream service.
 */
export function isDatabaseError(error: unknown): error is DatabaseError | DatabaseUnavailableError {
  return error instanceof DatabaseError || error instanceof DatabaseUnavailableError;
}
