/**
 * The sweep after a full snapshot (docs/reference/sync-semantics.md#full-snapshots-and-sweeps, docs/reference/sync-semantics.md#users-who-left-and-pairs-out-of-reach): crawl misses counted and, past
 * `delete_after_missed_full`, revoked (held by the mass-delete guard when too many); users who left,
 * pairs removed from the trigger and pairs skipped past their grace lose their access (not held).
 * A run's pairs are swept in one transaction that also records each as done, so a crash mid-sweep
 * resumes with the pairs not yet swept and never counts a miss twice; counters and log lines
 * follow the commit.
 */
import type { AccessItem } from "../api/schemas.js";
import { AbortedError } from "../errors.js";
import type { ProblemKind, ProblemSighting } from "../store/console-types.js";
import type { StoreOps } from "../store/store.js";
import type { PairRef, RunSource, Trigger } from "../store/types.js";
import type { MirrorPass } from "./context.js";
import {
  decideLeavers,
  type LeaveReason,
  type LeavingPair,
  type RunFact,
  skippedListComplete,
} from "./leavers.js";
import { sourceSucceeded } from "./outcome.js";
import { problemSubject } from "./problem-subject.js";
import { applyRevocations, countRevocations, type Revocations } from "./revoke.js";
import { decideGuard } from "./sweep-approval.js";

export async function sweep(pass: MirrorPass, trigger: Trigger): Promise<void> {
  if (trigger.mode !== "full") return;
  pass.ctx.crashPoint("before-sweep");
  await sweepMisses(pass, trigger);
  if (!trigger.leaversSwept) await sweepLeavers(pass, trigger);
}

async function sweepMisses(pass: MirrorPass, trigger: Trigger): Promise<void> {
  const { ctx, mirror } = pass;
  const { store } = ctx;
  const threshold = mirror.deleteAfterMissedFull;
  const runs = await store.runs.ofTrigger(trigger.id);
  // The first full pass that sweeps takes the mirror's `approve-sweep`, if any (sweep-approval.ts).
  if (runs.some((r) => r.ingest === "done")) await store.approvals.take(trigger.id, mirror.name);
  // Read at once (PostgreSQL answers them on several connections together): sweeping one run's
  // pairs changes no other run's sources.
  const sourcesByRun = await Promise.all(runs.map((run) => store.runs.sourcesOf(run.syncId)));
  for (const [i, run] of runs.entries()) {
    if (run.ingest !== "done" || run.createdAt === null) continue;
    const snapshotAt = run.createdAt;
    const pairs = (sourcesByRun[i] ?? [])
      .filter((source) => sourceSucceeded(run, source) && source.swept === null)
      .map((source) => ({
        source,
        pair: { mirror: mirror.name, userEmail: run.userEmail, serverInstanceId: source.serverInstanceId },
      }));
    if (pairs.length === 0) continue;
    const swept = await store.transaction(async (tx) => {
      // Each group of statements is issued at once (one round trip on PostgreSQL), in order. A
      // pair's counts stay true while the run's other pairs are swept: each sweeps its own rows.
      const counted = await Promise.all(
        pairs.map(({ pair }) =>
          Promise.all([
            tx.access.countPairKeys(pair),
            tx.access.countRevocable(pair, snapshotAt, threshold),
            tx.approvals.allowance(trigger.id, pair),
          ]),
        ),
      );
      // With nothing to revoke the pairs are swept together; otherwise one after the other, so a
      // pair's revocations see the keys the pairs before it left, as pair by pair.
      const together = counted.every(([, revocable]) => revocable === 0);
      const done: Promise<SweptPair>[] = [];
      for (const [j, { pair, source }] of pairs.entries()) {
        const [total, revocable, approved] = counted[j] as [number, number, number | null];
        const step = sweepPair(
          pass,
          tx,
          trigger,
          { pair, source, syncId: run.syncId, snapshotAt },
          {
            total,
            revocable,
            approved,
          },
        );
        if (!together) await step;
        done.push(step);
      }
      return Promise.all(done);
    });
    for (const [j, { pair }] of pairs.entries()) reportSweep(pass, pair, swept[j] as SweptPair);
    ctx.crashPoint("mid-sweep");
  }
}

type SweptPair = { held: false; result: Revocations } | { held: true; revocable: number; total: number };

/** One pair's sweep inside its run's transaction: held by the guard, or misses counted and revoked. */
async function sweepPair(
  { ctx, mirror }: MirrorPass,
  tx: StoreOps,
  trigger: Trigger,
  {
    pair,
    source,
    syncId,
    snapshotAt,
  }: { pair: PairRef; source: RunSource; syncId: string; snapshotAt: string },
  { total, revocable, approved }: { total: number; revocable: number; approved: number | null },
): Promise<SweptPair> {
  const guard = decideGuard(
    { revocable, total },
    { maxDeleteFraction: mirror.maxDeleteFraction, allowMassDelete: trigger.allowMassDelete, approved },
  );
  const at = ctx.now().toISOString();
  if (!guard.apply) {
    await Promise.all([
      tx.runs.markSwept(syncId, source.source, "held"),
      tx.triggers.addSweepCounts(trigger.id, { held: revocable, sweepsHeld: 1 }),
      tx.problems.record([heldSweep(pair, { source, syncId, revocable, total, at })]),
    ]);
    return { held: true, revocable, total };
  }
  // What does not depend on the revoked keys goes out with the sweep statement; a pair with
  // nothing revoked and no approval to use then has nothing left to write before COMMIT.
  const [keys] = await Promise.all([
    tx.access.sweepMissed(pair, snapshotAt, mirror.deleteAfterMissedFull),
    tx.runs.markSwept(syncId, source.source, "applied"),
    tx.problems.clearPair(pair, ["held_sweep"]),
  ]);
  const result = await applyRevocations(ctx, tx, mirror.name, keys, `sweep:${trigger.id}`);
  await Promise.all([
    result.revoked > 0 ? tx.triggers.addSweepCounts(trigger.id, result) : undefined,
    guard.approved ? tx.approvals.use(trigger.id, pair, result.revoked) : undefined,
  ]);
  return { held: false, result };
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
    reason: `the mass-delete guard held a sweep that would revoke ${h.revocable} of the pair's ${h.total} access rows: check upstream, then \`syncmirror approve-sweep\` or \`sync --full --allow-mass-delete\``,
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

async function sweepLeavers(pass: MirrorPass, trigger: Trigger): Promise<void> {
  const { ctx, mirror } = pass;
  const { store } = ctx;
  const leaving = await findLeavingPairs(pass, trigger);
  if (leaving === null) {
    await store.triggers.markLeaversSwept(trigger.id, true);
    return;
  }
  const at = ctx.now().toISOString();
  for (const { pair, reason } of leaving) {
    const revoked = await store.transaction(async (tx) => {
      const keys = await tx.access.revokePair(pair);
      await tx.pairs.retire(pair, reason, at);
      await tx.problems.clearPair(pair, problemsEndedBy(reason));
      const result = await applyRevocations(ctx, tx, mirror.name, keys, `sweep:${trigger.id}`);
      await tx.triggers.addSweepCounts(trigger.id, result);
      return result;
    });
    countRevocations(ctx.metrics, mirror.name, revoked);
    ctx.log.info(
      { user_email: pair.userEmail, server_instance_id: pair.serverInstanceId, reason },
      "pair lost its access",
    );
  }
  await store.triggers.markLeaversSwept(trigger.id, false);
}

/**
 * A pair that lost its access has nothing left to sweep, ingest or reject; one that left the
 * project or the sync config is no longer skipped either (one past its grace still is).
 */
function problemsEndedBy(reason: LeaveReason): ProblemKind[] {
  const kinds: ProblemKind[] = ["held_sweep", "failed_source", "incomplete_source", "rejected_row"];
  return reason === "inaccessible" ? kinds : [...kinds, "skipped_pair"];
}

/**
 * Pairs holding access that lose it (`leavers.ts` decides). The access check is asked only when
 * the trigger's skipped list is incomplete (more than 100 skipped, or runs adopted without the
 * response); null when that check failed: nobody loses access for leaving in this pass. Reads
 * only, so the dry run asks the same question.
 */
export async function findLeavingPairs(pass: MirrorPass, trigger: Trigger): Promise<LeavingPair[] | null> {
  const { ctx, mirror } = pass;
  const { store } = ctx;
  let checked: AccessItem[] | null = null;
  if (!skippedListComplete(trigger.skipped, trigger.skippedCount)) {
    try {
      checked = await ctx.api.listAccess(mirror.syncConfigId, ctx.signal);
    } catch (error) {
      if (error instanceof AbortedError || ctx.signal.aborted) throw error;
      ctx.log.warn(
        { err: (error as Error).message },
        "access check failed: nobody loses access for leaving in this pass",
      );
      return null;
    }
  }
  const runs: RunFact[] = [];
  const ofTrigger = await store.runs.ofTrigger(trigger.id);
  // Read at once: PostgreSQL answers them on several connections together.
  const sourcesByRun = await Promise.all(
    ofTrigger.map((run) => (run.ingest === "done" ? store.runs.sourcesOf(run.syncId) : [])),
  );
  for (const [i, run] of ofTrigger.entries()) {
    const sources = sourcesByRun[i] ?? [];
    runs.push({
      userEmail: run.userEmail,
      read: run.ingest === "done",
      servers: sources.map((s) => s.serverInstanceId),
      succeededAt: sources.some((s) => sourceSucceeded(run, s)) ? run.createdAt : null,
    });
  }
  return decideLeavers({
    holding: await store.access.pairsWithAccess(mirror.name),
    skipped: trigger.skipped,
    skippedCount: trigger.skippedCount,
    checked:
      checked?.map((i) => ({
        userEmail: i.user_email,
        projectUser: i.project_user,
        inaccessibleServers: i.servers.filter((s) => !s.accessible).map((s) => s.server_instance_id),
      })) ?? null,
    runs,
    pairs: await store.pairs.listForMirror(mirror.name),
    graceHours: mirror.inaccessibleGraceHours,
  });
}
