/**
 * The sweep after a full snapshot (SPEC "Full", "Users who left"): crawl misses counted and, past
 * `delete_after_missed_full`, revoked (held by the mass-delete guard when too many); users who left,
 * pairs removed from the trigger and pairs skipped past their grace lose their access (not held).
 * Each pair's sweep is one transaction that also records that it is done, so a crash mid-sweep
 * resumes with the pairs not yet swept and never counts a miss twice.
 */
import type { AccessItem, SkippedPair } from "../api/schemas.js";
import { AbortedError } from "../errors.js";
import type { PairRef } from "../store/access.js";
import type { TriggerRow } from "../store/state.js";
import type { MirrorPass } from "./context.js";
import { sourceSucceeded } from "./outcome.js";
import { lagMs, newestWatermark } from "./plan.js";
import { applyRevocations } from "./revoke.js";

/** A sweep that would revoke more than this many keys (and more than the fraction) is held. */
export const MASS_DELETE_MIN_KEYS = 10;

export async function sweep(pass: MirrorPass, trigger: TriggerRow): Promise<void> {
  if (trigger.mode !== "full") return;
  pass.ctx.crashPoint("before-sweep");
  sweepMisses(pass, trigger);
  if (!trigger.leaversSwept) await sweepLeavers(pass, trigger);
}

function sweepMisses(pass: MirrorPass, trigger: TriggerRow): void {
  const { ctx, mirror } = pass;
  const { store } = ctx;
  const threshold = mirror.deleteAfterMissedFull;
  for (const run of store.state.runsOf(trigger.id)) {
    if (run.ingest !== "done" || run.createdAt === null) continue;
    for (const source of store.state.sourcesOf(run.syncId)) {
      if (!sourceSucceeded(run, source) || source.swept !== null) continue;
      const pair = {
        mirror: mirror.name,
        userEmail: run.userEmail,
        serverInstanceId: source.serverInstanceId,
      };
      const snapshotAt = run.createdAt;
      store.transaction(() => {
        const total = store.access.countPairKeys(pair);
        const revocable = store.access.countRevocable(pair, snapshotAt, threshold);
        const held =
          !trigger.allowMassDelete &&
          revocable > MASS_DELETE_MIN_KEYS &&
          revocable > mirror.maxDeleteFraction * total;
        if (held) {
          store.state.markSwept(run.syncId, source.source, "held");
          store.state.addSweepCounts(trigger.id, { held: revocable, sweepsHeld: 1 });
          ctx.metrics.sweepsHeld.inc({ mirror: mirror.name });
          ctx.log.warn(
            {
              user_email: pair.userEmail,
              server_instance_id: pair.serverInstanceId,
              would_revoke: revocable,
              of: total,
            },
            "sweep held by the mass-delete guard: nothing revoked; run `syncmirror sync --full --allow-mass-delete` to apply it",
          );
          return;
        }
        const keys = store.access.sweepMissed(pair, snapshotAt, threshold);
        const result = applyRevocations(ctx, mirror.name, keys, `sweep:${trigger.id}`);
        store.state.markSwept(run.syncId, source.source, "applied");
        store.state.addSweepCounts(trigger.id, result);
      });
      ctx.crashPoint("mid-sweep");
    }
  }
}

type LeaveReason = "left" | "removed" | "inaccessible";

/** A pair that loses all its access in this full pass, and why. */
export interface LeavingPair {
  pair: PairRef;
  reason: LeaveReason;
}

async function sweepLeavers(pass: MirrorPass, trigger: TriggerRow): Promise<void> {
  const { ctx, mirror } = pass;
  const { store } = ctx;
  const leaving = await findLeavingPairs(pass, trigger);
  if (leaving === null) {
    store.state.markLeaversSwept(trigger.id, true);
    return;
  }
  const at = ctx.now().toISOString();
  for (const { pair, reason } of leaving) {
    store.transaction(() => {
      const keys = store.access.revokePair(pair);
      store.pairs.retire(pair, reason, at);
      store.state.addSweepCounts(trigger.id, applyRevocations(ctx, mirror.name, keys, `sweep:${trigger.id}`));
    });
    ctx.log.info(
      { user_email: pair.userEmail, server_instance_id: pair.serverInstanceId, reason },
      "pair lost its access",
    );
  }
  store.state.markLeaversSwept(trigger.id, false);
}

/**
 * Pairs holding access that lose it: users who left, pairs removed from the trigger, pairs skipped
 * past their grace. Who left is read from the trigger's `skipped` list when it is complete;
 * otherwise (more than 100 skipped, or runs adopted without the response) from the access check.
 * Null when that check failed: nobody loses access for leaving in this pass. Reads only, so the
 * dry run asks the same question.
 */
export async function findLeavingPairs(pass: MirrorPass, trigger: TriggerRow): Promise<LeavingPair[] | null> {
  const { ctx, mirror } = pass;
  const { store } = ctx;
  const listed: SkippedPair[] | null = trigger.skipped === null ? null : JSON.parse(trigger.skipped);
  const complete = listed !== null && trigger.skippedCount <= listed.length;
  let checked: AccessItem[] | null = null;
  if (!complete) {
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
  const runs = store.state.runsOf(trigger.id);
  const usersRan = new Set(runs.map((r) => r.userEmail));
  const ranPairs = new Set<string>();
  const usersRead = new Set<string>();
  // This snapshot's created_at counts as the newest watermark even before it is recorded (dry run).
  let snapshotAt: string | null = null;
  for (const run of runs) {
    if (run.ingest !== "done") continue;
    usersRead.add(run.userEmail);
    for (const s of store.state.sourcesOf(run.syncId)) {
      ranPairs.add(pairId(run.userEmail, s.serverInstanceId));
      if (
        sourceSucceeded(run, s) &&
        run.createdAt !== null &&
        (snapshotAt === null || run.createdAt > snapshotAt)
      )
        snapshotAt = run.createdAt;
    }
  }
  const skipped = new Map<string, string>();
  for (const s of listed ?? []) skipped.set(pairId(s.user_email, s.server_instance_id), s.reason);
  const left = new Set<string>();
  if (checked !== null) {
    const inProject = new Set(checked.filter((i) => i.project_user).map((i) => i.user_email));
    for (const i of checked) {
      for (const server of i.servers)
        if (!server.accessible)
          skipped.set(pairId(i.user_email, server.server_instance_id), "not_accessible");
    }
    for (const p of store.access.pairsWithAccess(mirror.name))
      if (!inProject.has(p.userEmail)) left.add(p.userEmail);
  } else {
    for (const [id, reason] of skipped)
      if (reason === "not_a_project_user") left.add(id.split("\n")[0] as string);
    const usersSkipped = new Set([...skipped.keys()].map((id) => id.split("\n")[0]));
    for (const p of store.access.pairsWithAccess(mirror.name)) {
      if (!usersRan.has(p.userEmail) && !usersSkipped.has(p.userEmail)) left.add(p.userEmail);
    }
  }
  const pairRows = new Map(
    store.pairs.listForMirror(mirror.name).map((p) => [pairId(p.userEmail, p.serverInstanceId), p]),
  );
  const recorded = newestWatermark([...pairRows.values()]);
  const newest = snapshotAt !== null && (recorded === null || snapshotAt > recorded) ? snapshotAt : recorded;
  const graceMs = mirror.inaccessibleGraceHours * 3_600_000;
  const leaving: LeavingPair[] = [];
  for (const pair of store.access.pairsWithAccess(mirror.name)) {
    const reason = leaveReason(pair, pairId(pair.userEmail, pair.serverInstanceId));
    if (reason !== null) leaving.push({ pair, reason });
  }
  return leaving;

  function leaveReason(pair: PairRef, id: string): LeaveReason | null {
    if (left.has(pair.userEmail)) return "left";
    const skipReason = skipped.get(id);
    if (skipReason === undefined) {
      // Listed complete, the user ran and was read, yet this server is gone from the trigger.
      return complete && usersRead.has(pair.userEmail) && !ranPairs.has(id) ? "removed" : null;
    }
    if (skipReason === "not_accessible" || skipReason === "not_syncable") {
      const row = pairRows.get(id);
      return row !== undefined && lagMs(row, newest) > graceMs ? "inaccessible" : null;
    }
    return null;
  }
}

function pairId(userEmail: string, serverInstanceId: string): string {
  return `${userEmail}\n${serverInstanceId}`;
}
