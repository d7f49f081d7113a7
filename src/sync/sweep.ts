/**
 * The sweep after a full snapshot (docs/reference/sync-semantics.md#full-snapshots-and-sweeps, docs/reference/sync-semantics.md#users-who-left-and-pairs-out-of-reach): crawl misses counted and, past
 * `delete_after_missed_full`, revoked (held by the mass-delete guard when too many); users who left,
 * pairs removed from the trigger and pairs skipped past their grace lose their access (not held).
 * Pairs are swept in transactions that also record each as done (the runs whose pairs revoke
 * nothing several to a transaction; a pair that revokes something a batch of revocations a
 * transaction, its last one marking it done), so a crash mid-sweep resumes with the pairs not yet
 * swept and never counts a miss twice; counters and log lines follow the commit.
 */
import type { AccessItem } from "../api/schemas.js";
import { AbortedError } from "../errors.js";
import type { ProblemSighting } from "../store/console-types.js";
import type { StoreOps } from "../store/store.js";
import type { PairRef, RunSource, SkippedPairRecord, Trigger } from "../store/types.js";
import type { MirrorPass } from "./context.js";
import { passError } from "./fail-run.js";
import { decideLeavers, type LeavingPair, problemsEndedBy, skippedListComplete } from "./leavers.js";
import { sourceSucceeded } from "./outcome.js";
import { problemSubject } from "./problem-subject.js";
import {
  countRevocations,
  letTimersRun,
  type Revocations,
  type RevokedBatch,
  revokeBatch,
  revokeInTransactions,
} from "./revoke.js";
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
  // The first full pass that sweeps a pair takes its `approve-sweep`, if any (sweep-approval.ts):
  // in its first sweep transaction, ahead of any allowance read. A pair whose source did not
  // succeed is not swept: its approval waits for the next full pass.
  let take = read.runs.some((r) => r.ingest === "done");
  const todo = runsToSweep(pass, read);
  const sweeps = todo.flatMap((run) => run.pairs.map(({ pair }) => pair));
  const held = heldBefore(pass, read);
  if (todo.length === 0) {
    if (take) await store.approvals.take(trigger.id, mirror.name, sweeps);
    await recordHeldKeys(pass, trigger, held);
    return;
  }
  // A run whose pairs revoke nothing is swept with the others of its batch; one that revokes
  // something is left for after them, its pairs one after the other, a batch of revocations a
  // transaction (`sweepRevokingPair`).
  const revoking: RunToSweep[] = [];
  for (const batch of batches(todo)) {
    const taking = take;
    await letTimersRun();
    const swept = await store.transaction(async (tx) => {
      // Issued at once (one round trip on PostgreSQL, with the fence check).
      const [, revocable] = await Promise.all([
        taking ? tx.approvals.take(trigger.id, mirror.name, sweeps) : undefined,
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
            run.pairs.map(({ pair, source }) =>
              applyQuietSweep(pass, tx, trigger, {
                pair,
                source,
                syncId: run.syncId,
                snapshotAt: run.snapshotAt,
              }),
            ),
          ),
        ),
      );
      return quiet.map((run, i) => ({ run, results: results[i] as Revocations[] }));
    });
    take = false;
    for (const { results } of swept)
      for (const result of results) countRevocations(ctx.metrics, mirror.name, result);
    revoking.push(...batch.filter((run) => !swept.some((s) => s.run === run)));
    ctx.crashPoint("mid-sweep");
  }
  for (const run of revoking) {
    for (const { pair, source } of run.pairs) {
      const target = { pair, source, syncId: run.syncId, snapshotAt: run.snapshotAt };
      const swept = await sweepRevokingPair(pass, trigger, target);
      if (swept) {
        reportHeld(pass, pair, swept);
        held.push(target);
      }
    }
    ctx.crashPoint("mid-sweep");
  }
  await recordHeldKeys(pass, trigger, held);
}

/** The pairs of the trigger's runs whose sweep an attempt before this one held. */
function heldBefore({ mirror }: MirrorPass, read: TriggerRuns): { pair: PairRef; snapshotAt: string }[] {
  return read.runs.flatMap((run) => {
    const snapshotAt = run.createdAt;
    if (snapshotAt === null) return [];
    return sourcesOfRun(read, run)
      .filter((source) => source.swept === "held")
      .map((source) => ({
        pair: { mirror: mirror.name, userEmail: run.userEmail, serverInstanceId: source.serverInstanceId },
        snapshotAt,
      }));
  });
}

/**
 * The trigger's held revocations as keys (docs/reference/metrics.md), counted over every held pair at
 * once: three users losing one document is one key held back, not three. Counted once the misses
 * are swept, not per pair, which would read the earlier pairs' rows again for each (one count of 20
 * pairs sharing 5,000 held keys: 21 ms on SQLite, 40 ms on PostgreSQL); a crash before
 * it is made up by the resumed attempt, which counts the same keys (a held pair's rows are left as
 * they were).
 */
async function recordHeldKeys(
  { ctx, mirror }: MirrorPass,
  trigger: Trigger,
  held: readonly { pair: PairRef; snapshotAt: string }[],
): Promise<void> {
  if (held.length === 0) return;
  const keys = await ctx.store.access.countRevocableKeys(held, mirror.deleteAfterMissedFull);
  await ctx.store.triggers.setHeldKeys(trigger.id, keys);
}

/**
 * A run's pairs left to sweep: its sources that succeeded and were not swept yet, or whose sweep a
 * crash stopped between two batches of revocations (`applying`).
 */
interface RunToSweep {
  syncId: string;
  snapshotAt: string;
  pairs: { pair: PairRef; source: RunSource }[];
}

function runsToSweep({ mirror }: MirrorPass, read: TriggerRuns): RunToSweep[] {
  return read.runs.flatMap((run) => {
    if (run.ingest !== "done" || run.createdAt === null) return [];
    const pairs = sourcesOfRun(read, run)
      .filter(
        (source) => sourceSucceeded(run, source) && (source.swept === null || source.swept === "applying"),
      )
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

/** The pair's counts for the guard, issued at once. */
async function countPair(
  { mirror }: MirrorPass,
  tx: StoreOps,
  trigger: Trigger,
  { pair, snapshotAt }: SweepTarget,
): Promise<PairCounts> {
  const [total, revocable, approved] = await Promise.all([
    tx.access.countPairKeys(pair),
    tx.access.countRevocable(pair, snapshotAt, mirror.deleteAfterMissedFull),
    tx.approvals.allowance(trigger.id, pair),
  ]);
  return { total, revocable, approved };
}

/** A sweep the guard held: what it would have revoked, of how many keys. */
interface HeldSweep {
  revocable: number;
  total: number;
}

/** A pair of a run being swept: its source, and the snapshot its misses are counted against. */
interface SweepTarget {
  pair: PairRef;
  source: RunSource;
  syncId: string;
  snapshotAt: string;
}

/**
 * A pair with something to revoke, a batch of revocations a transaction (`revokeInTransactions`).
 * The first decides, on the counts taken before any revocation: the guard holds the sweep (nothing
 * revoked, the pair marked `held`), or it applies, the approval it needs used in that transaction.
 * Until its last batch the pair is marked `applying`, so a pass resumed after a crash goes on with
 * the keys left instead of judging them again (fewer, they could pass the guard on their own, or
 * be held half revoked if the config changed); the last batch counts the miss of the keys left and
 * marks it `applied`.
 */
async function sweepRevokingPair(
  pass: MirrorPass,
  trigger: Trigger,
  target: SweepTarget,
): Promise<HeldSweep | null> {
  const { ctx } = pass;
  const { pair, source, syncId } = target;
  const decided = source.swept === "applying";
  const swept = await revokeInTransactions(ctx, pass.mirror.name, async (tx, first) => {
    if (!first || decided) return { ...(await sweepBatch(pass, tx, trigger, target, null)), held: null };
    const counts = await countPair(pass, tx, trigger, target);
    const guard = guardSweep(pass, trigger, counts);
    if (guard.apply) {
      const approved = guard.approved ? counts.revocable : null;
      return { ...(await sweepBatch(pass, tx, trigger, target, { approved })), held: null };
    }
    const { revocable, total } = counts;
    await Promise.all([
      tx.runs.markSwept(syncId, source.source, "held"),
      tx.triggers.addSweepCounts(trigger.id, { sweepsHeld: 1 }),
      tx.problems.record([
        heldSweep(pair, { source, syncId, revocable, total, at: ctx.now().toISOString() }),
      ]),
    ]);
    return { revoked: 0, deleted: 0, last: true, held: { revocable, total } };
  });
  return swept.last.held;
}

/**
 * One batch of an applied sweep's revocations, with its share of the trigger's counts. `decision`
 * in the batch that decided: the pair's held sweep problem ends, and the approval, if the sweep
 * needed it, is used for every revocation the sweep makes (counted before the first).
 */
async function sweepBatch(
  pass: MirrorPass,
  tx: StoreOps,
  trigger: Trigger,
  target: SweepTarget,
  decision: { approved: number | null } | null,
): Promise<RevokedBatch> {
  const { pair, source, syncId } = target;
  const approved = decision?.approved ?? null;
  const [batch] = await Promise.all([
    sweepMissedBatch(pass, tx, trigger, target),
    decision ? tx.problems.clearPair(pair, ["held_sweep"]) : undefined,
    approved !== null ? tx.approvals.use(trigger.id, pair, approved) : undefined,
  ]);
  await Promise.all([
    batch.last || decision
      ? tx.runs.markSwept(syncId, source.source, batch.last ? "applied" : "applying")
      : undefined,
    batch.revoked > 0 ? tx.triggers.addSweepCounts(trigger.id, batch) : undefined,
  ]);
  return batch;
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

/** The next batch of the pair's missed keys at the threshold revoked; the last also counts the misses of the keys left. */
function sweepMissedBatch(
  { ctx, mirror }: MirrorPass,
  tx: StoreOps,
  trigger: Trigger,
  { pair, snapshotAt }: SweepTarget,
): Promise<RevokedBatch> {
  return revokeBatch(
    ctx,
    tx,
    mirror.name,
    (limit) => tx.access.sweepMissed(pair, snapshotAt, mirror.deleteAfterMissedFull, limit),
    `sweep:${trigger.id}`,
  );
}

/**
 * The sweep of a pair its count, in this transaction, shows revoking nothing: one batch, its last,
 * that counts the misses. What does not depend on the revoked keys goes out with the sweep
 * statement, so nothing is left to write before COMMIT.
 */
async function applyQuietSweep(
  pass: MirrorPass,
  tx: StoreOps,
  trigger: Trigger,
  target: SweepTarget,
): Promise<Revocations> {
  const { pair, source, syncId } = target;
  const [result] = await Promise.all([
    sweepMissedBatch(pass, tx, trigger, target),
    tx.runs.markSwept(syncId, source.source, "applied"),
    tx.problems.clearPair(pair, ["held_sweep"]),
  ]);
  if (result.revoked > 0) await tx.triggers.addSweepCounts(trigger.id, result);
  return { revoked: result.revoked, deleted: result.deleted };
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

/** A held sweep, once committed: its counter and warning. */
function reportHeld({ ctx, mirror }: MirrorPass, pair: PairRef, swept: HeldSweep): void {
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
  const { leaving, accessCheckError, unlisted } = await findLeavingPairs(pass, trigger, read);
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
  await markLeaversSwept(pass, trigger, accessCheckError);
}

/**
 * The leavers done, with the access check's failure (the reason the pass is `partial`) kept among
 * the pass's errors in the same transaction: a pass resumed after a crash before it records it
 * once, when it asks again.
 */
async function markLeaversSwept(pass: MirrorPass, trigger: Trigger, accessCheckError: string | null) {
  const { ctx } = pass;
  await ctx.store.transaction(async (tx) => {
    await Promise.all([
      tx.triggers.markLeaversSwept(trigger.id, accessCheckError !== null),
      accessCheckError === null
        ? undefined
        : tx.history.addErrors(trigger.id, [
            passError(
              ctx,
              `the access check failed (${accessCheckError}): users who left keep their access until the next full pass`,
            ),
          ]),
    ]);
  });
}

/**
 * A full pass the service refused before any run started (400, 409, the feature off) has no
 * snapshot, but the access check still says who left the project or the sync config: they lose
 * their access now, as at a full snapshot, rather than keep it for as long as the refusal lasts (a
 * config whose every user left is refused with 400 for good). Pairs out of reach keep theirs: their
 * grace ends at a full snapshot. A failed check revokes nobody.
 */
export async function sweepLeaversOfRefusedPass(pass: MirrorPass, trigger: Trigger): Promise<void> {
  const { leaving, accessCheckError } = await findLeavingPairs(pass, trigger, {
    runs: [],
    sources: new Map(),
  });
  const left = leaving.filter(({ reason }) => reason !== "inaccessible");
  await revokeLeaving(pass, trigger, left, pass.ctx.now().toISOString());
  await markLeaversSwept(pass, trigger, accessCheckError);
}

/**
 * Each leaving pair's access revoked a batch a transaction (`revokeInTransactions`), the pair
 * retired with its last batch: killed before, it still holds access, so the resumed pass finds it
 * leaving again and goes on with the keys left.
 */
async function revokeLeaving(
  { ctx, mirror }: MirrorPass,
  trigger: Trigger,
  leaving: readonly LeavingPair[],
  at: string,
): Promise<void> {
  for (const { pair, reason } of leaving) {
    const revoked = await revokeInTransactions(ctx, mirror.name, async (tx) => {
      const batch = await revokeBatch(
        ctx,
        tx,
        mirror.name,
        (limit) => tx.access.revokePair(pair, limit),
        `sweep:${trigger.id}`,
      );
      await Promise.all([
        tx.triggers.addSweepCounts(trigger.id, batch),
        batch.last ? tx.pairs.retire(pair, reason, at) : undefined,
        batch.last ? tx.problems.clearPair(pair, problemsEndedBy(reason)) : undefined,
      ]);
      return batch;
    });
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
 * without the response); `accessCheckError`, its error, when that check failed: nobody loses
 * access for leaving in this pass (pairs past their grace still do). Reads only, so the dry run
 * asks the same question.
 */
export async function findLeavingPairs(
  pass: MirrorPass,
  trigger: Trigger,
  read: TriggerRuns,
): Promise<{ leaving: LeavingPair[]; accessCheckError: string | null; unlisted: SkippedPairRecord[] }> {
  const { ctx, mirror } = pass;
  const { store } = ctx;
  let checked: AccessItem[] | "failed" | null = null;
  let accessCheckError: string | null = null;
  if (!skippedListComplete(trigger.skipped, trigger.skippedCount)) {
    try {
      checked = await ctx.api.listAccess(mirror.syncConfigId, ctx.signal);
    } catch (error) {
      if (error instanceof AbortedError || ctx.signal.aborted) throw error;
      accessCheckError = (error as Error).message;
      ctx.log.warn(
        { err: accessCheckError },
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
    accessCheckError,
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
