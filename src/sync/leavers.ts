/**
 * Who loses all their access at a full pass (docs/reference/sync-semantics.md#users-who-left-and-pairs-out-of-reach), decided from gathered facts:
 * users who left the project, pairs removed from the trigger, and pairs skipped as not accessible
 * or not syncable for longer than `inaccessible_grace_hours`.
 *
 * Who left comes from one of two sources, never both: the trigger's skipped list when it is
 * complete (`skipped_count` no larger than the list), otherwise the access check's answer. When
 * that check failed nobody leaves, but a pair the list shows past its grace still loses its access
 * (fail closed). Pairs holding no access are decided too, so that a pair that left is retired and
 * stops holding `since` back; so are pairs the trigger skipped that the mirror has no row for yet
 * (a user who left before the mirror's first pass is retired in that pass, never awaiting a baseline).
 */
import type { ProblemKind } from "../store/console-types.js";
import type { Pair, PairRef, SkippedPairRecord } from "../store/types.js";
import { lagMs, newestWatermark } from "./plan.js";

export type LeaveReason = "left" | "removed" | "inaccessible";

/**
 * A pair that lost its access has nothing left to sweep, ingest or reject; one that left the
 * project or the sync config is no longer skipped either (one past its grace still is).
 */
export function problemsEndedBy(reason: LeaveReason): ProblemKind[] {
  const kinds: ProblemKind[] = ["held_sweep", "failed_source", "incomplete_source", "rejected_row"];
  return reason === "inaccessible" ? kinds : [...kinds, "skipped_pair"];
}

/** A pair that loses all its access in this full pass, and why. */
export interface LeavingPair {
  pair: PairRef;
  reason: LeaveReason;
}

/** One user's answer in the access check (`GET /sync-configs/{id}/access`). */
export interface AccessFact {
  userEmail: string;
  projectUser: boolean;
  /** Every server the check lists for the user: one not listed was removed from the sync config. */
  servers: readonly string[];
  inaccessibleServers: readonly string[];
}

/** One run of the trigger: who ran, whether its export was read, and on which servers. */
export interface RunFact {
  userEmail: string;
  read: boolean;
  servers: readonly string[];
  /** Server `created_at` when one of its sources succeeded: this snapshot's time. */
  succeededAt: string | null;
}

export interface LeaverFacts {
  mirror: string;
  /** Pairs holding access through the mirror now. */
  holding: readonly PairRef[];
  /** The trigger's skipped list; null when its runs were adopted (the response was lost). */
  skipped: readonly SkippedPairRecord[] | null;
  skippedCount: number;
  /** The access check's answer; null unless the skipped list was incomplete; "failed" when it could not be read. */
  checked: readonly AccessFact[] | "failed" | null;
  runs: readonly RunFact[];
  /** The mirror's pairs with their watermarks. */
  pairs: readonly Pair[];
  graceHours: number;
}

/** Whether the trigger's skipped list tells who left, or the access check must be asked. */
export function skippedListComplete(
  skipped: readonly SkippedPairRecord[] | null,
  skippedCount: number,
): boolean {
  return skipped !== null && skippedCount <= skipped.length;
}

/** Pairs keyed by user, then server: no string encoding of the pair. */
class PairMap<T> {
  private readonly byUser = new Map<string, Map<string, T>>();
  set(user: string, server: string, value: T): void {
    const servers = this.byUser.get(user) ?? new Map<string, T>();
    servers.set(server, value);
    this.byUser.set(user, servers);
  }
  get(user: string, server: string): T | undefined {
    return this.byUser.get(user)?.get(server);
  }
  users(): Iterable<string> {
    return this.byUser.keys();
  }
}

export function decideLeavers(f: LeaverFacts): LeavingPair[] {
  const complete = skippedListComplete(f.skipped, f.skippedCount);
  const skipReasons = new PairMap<string>();
  for (const s of f.skipped ?? []) skipReasons.set(s.user_email, s.server_instance_id, s.reason);
  const ranPairs = new PairMap<true>();
  const usersRead = new Set<string>();
  // This snapshot's created_at counts as the newest watermark even before it is recorded (dry run).
  let snapshotAt: string | null = null;
  for (const run of f.runs) {
    if (!run.read) continue;
    usersRead.add(run.userEmail);
    for (const server of run.servers) ranPairs.set(run.userEmail, server, true);
    if (run.succeededAt !== null && (snapshotAt === null || run.succeededAt > snapshotAt))
      snapshotAt = run.succeededAt;
  }
  const checked = Array.isArray(f.checked) ? f.checked : [];
  const inProject = new Set(checked.filter((i) => i.projectUser).map((i) => i.userEmail));
  const listed = new PairMap<true>();
  for (const i of checked) for (const server of i.servers) listed.set(i.userEmail, server, true);
  const candidates = pairsToDecide(f);
  const left = whoLeft(f, candidates, inProject, skipReasons);
  const pairRows = new PairMap<Pair>();
  for (const p of f.pairs) pairRows.set(p.userEmail, p.serverInstanceId, p);
  const recorded = newestWatermark(f.pairs);
  const newest = snapshotAt !== null && (recorded === null || snapshotAt > recorded) ? snapshotAt : recorded;
  const graceMs = f.graceHours * 3_600_000;

  const reasonFor = (pair: PairRef): LeaveReason | null => {
    if (left.has(pair.userEmail)) return "left";
    const skipReason = skipReasons.get(pair.userEmail, pair.serverInstanceId);
    if (skipReason === undefined) {
      // Listed complete, the user ran and was read, yet this server is gone from the trigger; or
      // the access check lists the user in the project without this server.
      const removedFromTrigger =
        complete && usersRead.has(pair.userEmail) && !ranPairs.get(pair.userEmail, pair.serverInstanceId);
      const removedFromCheck =
        inProject.has(pair.userEmail) &&
        !listed.get(pair.userEmail, pair.serverInstanceId) &&
        !ranPairs.get(pair.userEmail, pair.serverInstanceId);
      return removedFromTrigger || removedFromCheck ? "removed" : null;
    }
    if (skipReason === "not_accessible" || skipReason === "not_syncable") {
      const row = pairRows.get(pair.userEmail, pair.serverInstanceId);
      return row !== undefined && lagMs(row, newest) > graceMs ? "inaccessible" : null;
    }
    return null;
  };
  return candidates.flatMap((pair) => {
    const reason = reasonFor(pair);
    return reason === null ? [] : [{ pair, reason }];
  });
}

/**
 * The pairs holding access, then the mirror's other pairs not retired yet, then the skipped pairs
 * it has no row for.
 */
function pairsToDecide(f: LeaverFacts): PairRef[] {
  const seen = new PairMap<true>();
  const pairs: PairRef[] = [];
  const add = (p: PairRef) => {
    if (seen.get(p.userEmail, p.serverInstanceId)) return;
    seen.set(p.userEmail, p.serverInstanceId, true);
    pairs.push({ mirror: p.mirror, userEmail: p.userEmail, serverInstanceId: p.serverInstanceId });
  };
  for (const p of f.holding) add(p);
  for (const p of f.pairs) if (p.retiredAt === null) add(p);
  const known = new PairMap<true>();
  for (const p of f.pairs) known.set(p.userEmail, p.serverInstanceId, true);
  for (const s of f.skipped ?? [])
    if (!known.get(s.user_email, s.server_instance_id))
      add({ mirror: f.mirror, userEmail: s.user_email, serverInstanceId: s.server_instance_id });
  return pairs;
}

/**
 * Users who left. From the access check: the user of every pair who is no longer a project user
 * (servers it reports inaccessible join the skip reasons); nobody when the check failed. From a
 * complete skipped list: users skipped as `not_a_project_user`, and users of pairs neither in the
 * trigger's runs nor in its skipped list.
 */
function whoLeft(
  f: LeaverFacts,
  candidates: readonly PairRef[],
  /** The users the access check lists in the project. */
  inProject: ReadonlySet<string>,
  skipReasons: PairMap<string>,
): Set<string> {
  const left = new Set<string>();
  if (f.checked === "failed") return left;
  if (f.checked !== null) {
    for (const i of f.checked)
      for (const server of i.inaccessibleServers) skipReasons.set(i.userEmail, server, "not_accessible");
    for (const p of candidates) if (!inProject.has(p.userEmail)) left.add(p.userEmail);
    return left;
  }
  for (const s of f.skipped ?? []) if (s.reason === "not_a_project_user") left.add(s.user_email);
  const usersSkipped = new Set(skipReasons.users());
  const usersRan = new Set(f.runs.map((r) => r.userEmail));
  for (const p of candidates)
    if (!usersRan.has(p.userEmail) && !usersSkipped.has(p.userEmail)) left.add(p.userEmail);
  return left;
}
