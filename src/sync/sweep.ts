/**
 * The sweep after a full snapshot (docs/reference/sync-semantics.md#full-snapshots-and-sweeps, docs/reference/sync-semantics.md#users-who-left-and-pairs-out-of-reach): crawl misses counted and, past
 * `delete_after_missed_full`, revoked (held by the mass-delete guard when too many); users who left,
 * pairs removed from the trigger and pairs skipped past their grace lose their access (not held).
 * Pairs are swept in transactions that also record each as done (the runs whose pairs revoke
 * nothing several to a transaction, a run that revokes something in one of its own), so a crash
 * mid-sweep resumes with the pairs not yet swept and never counts a miss twice; counters and log
 * lines follow the commit.
 */
import type { AccessItem } from "../api/schemas.js";
import { AbortedError } from "../errors.js";
import type { ProblemSighting } from "../store/console-types.js";
import type { StoreOps } from "../store/store.js";
import type { PairRef, RunSource, SkippedPairRecord, Trigger } from "../store/types.js";
import type { MirrorPass } from "./context.js";
import { decideLeavers, type LeavingPair, problemsEndedBy, skippedListComplete } from "./leavers.js";
import { sourceSucceeded } from "./outcome.js";
import { problemSubject } from "./problem-subject.js";
import { countRevocations, type Revocations, revokeInBatches } from "./revoke.js";
import { recordSkips } from "./skipped-problems.js";
import { decideGuard, type GuardDecision } from "./sweep-approval.js";
import { firstRunCreatedAt, runFacts, sourcesOfRun, type TriggerRuns } from "./trigger-runs.js";

export async function sweep(pass: MirrorPass, trigger: Trigger, read: TriggerRuns): Promise<void> {
  if (trigger.mode !== "full") return;
  pass.ctx.crashPoint("before-sweep");
  await sweepMisses(pass, trigger, read);
  if (!trigger.leaversSwept) await sweepLeavers(pass, trigger, read);
}

async function sweepMisses(pass: MirrorPass, trigger: Trigger, read: TriggerRuns): Promise<void> {
  const { ctx, mirror } = pass;
  const { store } = ctx;
  // The first full pass that sweeps takes the mirror's `approve-sweep`, if any (sweep-approval.ts):
  // in its first sweep transaction, ahead of any allowance read.
  let take = read.runs.some((r) => r.ingest === "done");
  const todo = runsToSweep(pass, read);
  if (todo.length === 0) {
    if (take) await store.approvals.take(trigger.id, mirror.name);
    return;
  }
  // A run whose pairs revoke nothing is swept with the others of its batch; one that revokes
  // something is left for a transaction of its own, its pairs one after the other.
  const revoking: RunToSweep[] = [];
  for (const batch of batches(todo)) {
    const taking = take;
    const swept = await store.transaction(async (tx) => {
      // Issued at once (one round trip on PostgreSQL, with the fence check).
      const [, revocable] = await Promise.all([
        taking ? tx.approvals.take(trigger.id, mirror.name) : undefined,
        tx.access.countRevocableEach(
          batch.flatMap((run) => run.pairs.map(({ pair }) => ({ pair, snapshotAt: run.snapshotAt }))),
          mirror.deleteAfterMissedFull,
        ),
      ]);
      // The counts come in the batch's pair order: each run's are the next `pairs.length`.
      let from = 0;
      const quiet = batch.filter((run) => {
        const counts = revocable.slice(from, from + run.pairs.length);
        from += run.pairs.length;
        return counts.every((n) => n === 0);
      });
      // Nothing to revoke, nothing for the guard to hold: every pair of every quiet run goes out
      // at once (one round trip).
      const results = await Promise.all(
        quiet.map((run) =>
          Promise.all(
            run.pairs.map(async ({ pair, source }): Promise<SweptPair> => {
              const target = { pair, source, syncId: run.syncId, snapshotAt: run.snapshotAt };
              return { held: false, result: await applySweep(pass, tx, trigger, target, false) };
            }),
          ),
        ),
      );
      return quiet.map((run, i) => ({ run, results: results[i] as SweptPair[] }));
    });
    take = false;
    for (const { run, results } of swept) reportRun(pass, run, results);
    revoking.push(...batch.filter((run) => !swept.some((s) => s.run === run)));
    ctx.crashPoint("mid-sweep");
  }
  for (const run of revoking) {
    const results = await store.transaction(async (tx) =>
      sweepRun(pass, tx, trigger, run, await countPairs(pass, tx, trigger, run)),
    );
    reportRun(pass, run, results);
    ctx.crashPoint("mid-sweep");
  }
}

/** A run's pairs left to sweep: its sources that succeeded and were not swept yet. */
interface RunToSweep {
  syncId: string;
  snapshotAt: string;
  pairs: { pair: PairRef; source: RunSource }[];
}

function runsToSweep({ mirror }: MirrorPass, read: TriggerRuns): RunToSweep[] {
  return read.runs.flatMap((run) => {
    if (run.ingest !== "done" || run.createdAt === null) return [];
    const pairs = sourcesOfRun(read, run)
      .filter((source) => sourceSucceeded(run, source) && source.swept === null)
      .map((source) => ({
        source,
        pair: { mirror: mirror.name, userEmail: run.userEmail, serverInstanceId: source.serverInstanceId },
      }));
    return pairs.length === 0 ? [] : [{ syncId: run.syncId, snapshotAt: run.createdAt, pairs }];
  });
}

/**
 * Runs in order, as many as fit `PAIRS_PER_SWEEP_TRANSACTION` pairs (a run with more goes alone): a
 * crash or a retry redoes at most a batch, and a transaction's statements stay a few hundred.
 */
const PAIRS_PER_SWEEP_TRANSACTION = 100;

/**
 * The runs cut into batches. A pair already in a batch (two runs of one user) starts the next: its
 * second sweep must be counted after its first, which may bring keys to the threshold.
 */
function batches(runs: readonly RunToSweep[]): RunToSweep[][] {
  const out: { runs: RunToSweep[]; pairs: Set<string> }[] = [];
  for (const run of runs) {
    const keys = run.pairs.map(({ pair }) => `${pair.userEmail}\n${pair.serverInstanceId}`);
    const last = out.at(-1);
    if (
      last &&
      last.pairs.size + keys.length <= PAIRS_PER_SWEEP_TRANSACTION &&
      !keys.some((key) => last.pairs.has(key))
    ) {
      last.runs.push(run);
      for (const key of keys) last.pairs.add(key);
    } else out.push({ runs: [run], pairs: new Set(keys) });
  }
  return out.map((batch) => batch.runs);
}

export interface PairCounts {
  total: number;
  revocable: number;
  approved: number | null;
}

/** Each of the run's pairs' counts, issued at once. */
function countPairs(
  { mirror }: MirrorPass,
  tx: StoreOps,
  trigger: Trigger,
  run: RunToSweep,
): Promise<PairCounts[]> {
  return Promise.all(
    run.pairs.map(async ({ pair }) => {
      const [total, revocable, approved] = await Promise.all([
        tx.access.countPairKeys(pair),
        tx.access.countRevocable(pair, run.snapshotAt, mirror.deleteAfterMissedFull),
        tx.approvals.allowance(trigger.id, pair),
      ]);
      return { total, revocable, approved };
    }),
  );
}

/**
 * A run's pairs inside its transaction, which also records each as swept. With nothing to revoke
 * they are swept together; otherwise one after the other, so a pair's revocations see the keys
 * the pairs before it left, as pair by pair. A pair's counts stay true while the others are
 * swept: each sweeps its own rows.
 */
async function sweepRun(
  pass: MirrorPass,
  tx: StoreOps,
  trigger: Trigger,
  run: RunToSweep,
  counted: readonly PairCounts[],
): Promise<SweptPair[]> {
  const together = counted.every((c) => c.revocable === 0);
  const done: Promise<SweptPair>[] = [];
  for (const [j, { pair, source }] of run.pairs.entries()) {
    const step = sweepPair(
      pass,
      tx,
      trigger,
      { pair, source, syncId: run.syncId, snapshotAt: run.snapshotAt },
      counted[j] as PairCounts,
    );
    if (!together) await step;
    done.push(step);
  }
  return Promise.all(done);
}

/** A run's sweep, once committed: each pair's counters and warnings. */
function reportRun(pass: MirrorPass, run: RunToSweep, results: readonly SweptPair[]): void {
  for (const [j, { pair }] of run.pairs.entries()) reportSweep(pass, pair, results[j] as SweptPair);
}

type SweptPair = { held: false; result: Revocations } | { held: true; revocable: number; total: number };

/** A pair of a run being swept: its source, and the snapshot its misses are counted against. */
interface SweepTarget {
  pair: PairRef;
  source: RunSource;
  syncId: string;
  snapshotAt: string;
}

/** One pair's sweep inside its run's transaction: held by the guard, or misses counted and revoked. */
async function sweepPair(
  pass: MirrorPass,
  tx: StoreOps,
  trigger: Trigger,
  target: SweepTarget,
  { total, revocable, approved }: PairCounts,
): Promise<SweptPair> {
  const { ctx } = pass;
  const { pair, source, syncId } = target;
  const guard = guardSweep(pass, trigger, { total, revocable, approved });
  if (!guard.apply) {
    const at = ctx.now().toISOString();
    await Promise.all([
      tx.runs.markSwept(syncId, source.source, "held"),
      tx.triggers.addSweepCounts(trigger.id, { held: revocable, sweepsHeld: 1 }),
      tx.problems.record([heldSweep(pair, { source, syncId, revocable, total, at })]),
    ]);
    return { held: true, revocable, total };
  }
  return { held: false, result: await applySweep(pass, tx, trigger, target, guard.approved) };
}

/**
 * The mass-delete guard on a pair's sweep in this mirror's pass (`sweep-approval.ts`): the mirror's
 * `max_delete_fraction`, the trigger's `--allow-mass-delete` and the approval it took. The dry run
 * asks it too, so it says which sweeps the real pass would hold.
 */
export function guardSweep(
  { mirror }: MirrorPass,
  trigger: Trigger,
  { total, revocable, approved }: PairCounts,
): GuardDecision {
  return decideGuard(
    { revocable, total },
    { maxDeleteFraction: mirror.maxDeleteFraction, allowMassDelete: trigger.allowMassDelete, approved },
  );
}

/** How to apply a held sweep, as its problem and the dry run say it. */
export const APPLY_HELD_SWEEP = "`syncmirror approve-sweep` or `sync --full --allow-mass-delete`";

/** The pair's misses counted and those at the threshold revoked; `approved`: the approval's allowance used. */
async function applySweep(
  { ctx, mirror }: MirrorPass,
  tx: StoreOps,
  trigger: Trigger,
  { pair, source, syncId, snapshotAt }: SweepTarget,
  approved: boolean,
): Promise<Revocations> {
  // What does not depend on the revoked keys goes out with the sweep statement; a pair with
  // nothing revoked and no approval to use then has nothing left to write before COMMIT.
  // The first batch is sent first: the others follow only when it was full.
  const [result] = await Promise.all([
    revokeInBatches(
      ctx,
      tx,
      mirror.name,
      (limit) => tx.access.sweepMissed(pair, snapshotAt, mirror.deleteAfterMissedFull, limit),
      `sweep:${trigger.id}`,
    ),
    tx.runs.markSwept(syncId, source.source, "applied"),
    tx.problems.clearPair(pair, ["held_sweep"]),
  ]);
  await Promise.all([
    result.revoked > 0 ? tx.triggers.addSweepCounts(trigger.id, result) : undefined,
    approved ? tx.approvals.use(trigger.id, pair, result.revoked) : undefined,
  ]);
  return result;
}

/** The problem a held sweep is, until a sweep applies for its pair. */
function heldSweep(
  pair: PairRef,
  h: { source: RunSource; syncId: string; revocable: number; total: number; at: string },
): ProblemSighting {
  return {
    mirror: pair.mirror,
    kind: "held_sweep",
    subject: problemSubject("sweep", pair.userEmail, pair.serverInstanceId),
    userEmail: pair.userEmail,
    serverInstanceId: pair.serverInstanceId,
    source: h.source.source,
    syncId: h.syncId,
    key: null,
    reason: `the mass-delete guard held a sweep that would revoke ${h.revocable} of the pair's ${h.total} access rows: check upstream, then ${APPLY_HELD_SWEEP}`,
    count: h.revocable,
    at: h.at,
  };
}

/** A pair's sweep, once committed: its counters, and a warning when the guard held it. */
function reportSweep({ ctx, mirror }: MirrorPass, pair: PairRef, swept: SweptPair): void {
  if (!swept.held) {
    countRevocations(ctx.metrics, mirror.name, swept.result);
    return;
  }
  ctx.metrics.sweepsHeld.inc({ mirror: mirror.name });
  ctx.log.warn(
    {
      user_email: pair.userEmail,
      server_instance_id: pair.serverInstanceId,
      would_revoke: swept.revocable,
      of: swept.total,
    },
    "sweep held by the mass-delete guard: nothing revoked; `syncmirror approve-sweep` lets the next full pass apply it (or `syncmirror sync --full --allow-mass-delete`)",
  );
}

async function sweepLeavers(pass: MirrorPass, trigger: Trigger, read: TriggerRuns): Promise<void> {
  const { ctx } = pass;
  const { store } = ctx;
  const { leaving, leaversUnknown, unlisted } = await findLeavingPairs(pass, trigger, read);
  const at = ctx.now().toISOString();
  if (unlisted.length > 0) {
    // A pair first seen here counts its grace from this trigger's runs, as a listed one does: on
    // the service's clock, which is what every watermark it is compared with is read from.
    const seenAt = firstRunCreatedAt(read) ?? at;
    await store.transaction((tx) => recordSkips(tx, pass, unlisted, { at, seenAt }));
    ctx.log.info(
      { pairs: unlisted.length },
      "skipped pairs the trigger did not list, found by the access check",
    );
  }
  await revokeLeaving(pass, trigger, leaving, at);
  await store.triggers.markLeaversSwept(trigger.id, leaversUnknown);
}

/**
 * A full pass the service refused before any run started (400, 409, the feature off) has no
 * snapshot, but the access check still says who left the project or the sync config: they lose
 * their access now, as at a full snapshot, rather than keep it for as long as the refusal lasts (a
 * config whose every user left is refused with 400 for good). Pairs out of reach keep theirs: their
 * grace ends at a full snapshot. A failed check revokes nobody.
 */
export async function sweepLeaversOfRefusedPass(pass: MirrorPass, trigger: Trigger): Promise<void> {
  const { leaving, leaversUnknown } = await findLeavingPairs(pass, trigger, { runs: [], sources: new Map() });
  const left = leaving.filter(({ reason }) => reason !== "inaccessible");
  await revokeLeaving(pass, trigger, left, pass.ctx.now().toISOString());
  await pass.ctx.store.triggers.markLeaversSwept(trigger.id, leaversUnknown);
}

/** Each leaving pair's access revoked and the pair retired, one transaction per pair. */
async function revokeLeaving(
  { ctx, mirror }: MirrorPass,
  trigger: Trigger,
  leaving: readonly LeavingPair[],
  at: string,
): Promise<void> {
  const { store } = ctx;
  for (const { pair, reason } of leaving) {
    const revoked = await store.transaction(async (tx) => {
      // Issued at once (one round trip on PostgreSQL): only the revocations need the keys.
      const [result] = await Promise.all([
        revokeInBatches(
          ctx,
          tx,
          mirror.name,
          (limit) => tx.access.revokePair(pair, limit),
          `sweep:${trigger.id}`,
        ),
        tx.pairs.retire(pair, reason, at),
        tx.problems.clearPair(pair, problemsEndedBy(reason)),
      ]);
      await tx.triggers.addSweepCounts(trigger.id, result);
      return result;
    });
    countRevocations(ctx.metrics, mirror.name, revoked);
    ctx.log.info(
      {
        user_email: pair.userEmail,
        server_instance_id: pair.serverInstanceId,
        reason,
        access_revoked: revoked.revoked,
      },
      revoked.revoked > 0 ? "pair lost its access" : "pair retired: it held no access any more",
    );
  }
}

/**
 * Pairs that lose their access, or are retired (`leavers.ts` decides). The access check is asked
 * only when the trigger's skipped list is incomplete (more than 100 skipped, or runs adopted
 * without the response); `leaversUnknown` when that check failed: nobody loses access for leaving
 * in this pass (pairs past their grace still do). Reads only, so the dry run asks the same question.
 */
export async function findLeavingPairs(
  pass: MirrorPass,
  trigger: Trigger,
  read: TriggerRuns,
): Promise<{ leaving: LeavingPair[]; leaversUnknown: boolean; unlisted: SkippedPairRecord[] }> {
  const { ctx, mirror } = pass;
  const { store } = ctx;
  let checked: AccessItem[] | "failed" | null = null;
  if (!skippedListComplete(trigger.skipped, trigger.skippedCount)) {
    try {
      checked = await ctx.api.listAccess(mirror.syncConfigId, ctx.signal);
    } catch (error) {
      if (error instanceof AbortedError || ctx.signal.aborted) throw error;
      ctx.log.warn(
        { err: (error as Error).message },
        "access check failed: nobody loses access for leaving in this pass (pairs past their grace still do)",
      );
      checked = "failed";
    }
  }
  const runs = runFacts(read);
  // Read at once: PostgreSQL answers them on two connections together.
  const [holding, pairs] = await Promise.all([
    store.access.pairsWithAccess(mirror.name),
    store.pairs.listForMirror(mirror.name),
  ]);
  const leaving = decideLeavers({
    mirror: mirror.name,
    holding,
    skipped: trigger.skipped,
    skippedCount: trigger.skippedCount,
    checked: Array.isArray(checked)
      ? checked.map((i) => ({
          userEmail: i.user_email,
          projectUser: i.project_user,
          servers: i.servers.map((s) => s.server_instance_id),
          inaccessibleServers: i.servers.filter((s) => !s.accessible).map((s) => s.server_instance_id),
        }))
      : checked,
    runs,
    pairs,
    graceHours: mirror.inaccessibleGraceHours,
  });
  return {
    leaving,
    leaversUnknown: checked === "failed",
    unlisted: unlistedSkips(trigger, checked, leaving),
  };
}

/**
 * Pairs of users still in the project that the access check shows out of reach but the trigger's
 * skipped list, cut at 100 (or lost with its response), does not name: skipped as surely as the
 * listed ones, and reported the same way. Those leaving in this pass are not.
 */
function unlistedSkips(
  trigger: Trigger,
  checked: AccessItem[] | "failed" | null,
  leaving: readonly LeavingPair[],
): SkippedPairRecord[] {
  if (!Array.isArray(checked)) return [];
  const named = new Set(
    [
      ...(trigger.skipped ?? []),
      ...leaving.map(({ pair }) => ({
        user_email: pair.userEmail,
        server_instance_id: pair.serverInstanceId,
      })),
    ].map((s) => `${s.user_email}\n${s.server_instance_id}`),
  );
  return checked.flatMap((item) =>
    item.project_user
      ? item.servers
          .filter((s) => !s.accessible && !named.has(`${item.user_email}\n${s.server_instance_id}`))
          .map((s) => ({
            user_email: item.user_email,
            server_instance_id: s.server_instance_id,
            reason: s.auth_status === "not_syncable" ? "not_syncable" : "not_accessible",
            auth_status: s.auth_status ?? null,
          }))
      : [],
  );
}
