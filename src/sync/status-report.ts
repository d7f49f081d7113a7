/**
 * What `status` (and HTTP `/status`) shows per mirror: last incremental and full success, the
 * since the next trigger would send, the trigger and runs in flight, live resources, pairs
 * awaiting a baseline, held revocations, the process holding the mirror's lease, its next
 * scheduled times, whether it is paused and the pass due; the mirrors the database knows that the
 * config no longer names (retired); and the daemons alive. Read-only.
 */
import type { MirrorConfig } from "../config.js";
import { cronOccurrences } from "../cron-occurrences.js";
import { isDeadHereAndNow, runningReplicas } from "../lease-holder.js";
import { startableDue } from "../store/schedule-rules.js";
import type { Store } from "../store/store.js";
import type { DueReason, Lease, MirrorSchedule, Mode, Run, Trigger } from "../store/types.js";
import { fullOwedBecause } from "./full-owed.js";
import { planPass } from "./plan.js";

export interface MirrorStatus {
  mirror: string;
  /** Null for a declared sync config not applied yet. */
  sync_config_id: string | null;
  /** A declared sync config: what `apply` (or the daemon) recorded for it. */
  declared_sync_config: {
    name: string;
    origin: string | null;
    applied_at: string | null;
    last_error: string | null;
    last_error_at: string | null;
  } | null;
  last_incremental_success_at: string | null;
  last_full_success_at: string | null;
  last_outcome: string | null;
  last_outcome_at: string | null;
  last_message: string | null;
  next_since: string | null;
  next_mode: Mode;
  in_flight: {
    trigger_id: string | null;
    mode: string;
    state: string;
    since: string | null;
    runs: { sync_id: string; user_email: string; status: string; ingest: string }[];
  } | null;
  live_resources: number;
  pairs: number;
  pairs_awaiting_baseline: number;
  skipped_pairs: { user_email: string; server_instance_id: string; reason: string }[];
  /** Keys the latest full pass's held sweeps hold back, each once (`syncmirror_held_revocations`). */
  held_revocations: number;
  /** The process holding the mirror's lease (`hostname:pid`), or null when none does. */
  holder: string | null;
  /** That process's instance id (unique per process start, where `hostname:pid` may repeat). */
  holder_instance_id: string | null;
  /** When its lease runs out unless renewed (the database's clock). */
  lease_expires_at: string | null;
  /** The lease's fencing token: it grows at every takeover. */
  lease_epoch: number | null;
  /** The next scheduled times of `incremental_cron` and `full_cron` (UTC; skipped while paused). */
  next_incremental_at: string | null;
  next_full_at: string | null;
  /** Whether the mirror is paused; while it is, since when and by whom (else both null). */
  paused: boolean;
  paused_since: string | null;
  paused_by: string | null;
  /** The pass due and not started yet: its mode, why, since when (and who asked for it). */
  due: { mode: Mode; reason: DueReason; since: string; by: string | null } | null;
}

/**
 * A mirror the database knows that the config no longer names: nothing sweeps what it grants
 * until `syncmirror forget` revokes it (or the mirror is put back in the config).
 */
export interface RetiredMirrorStatus {
  mirror: string;
  /** Distinct users and keys its `resource_access` rows still grant. */
  users: number;
  keys: number;
}

/** What a retired mirror still grants and what to do about it, as `status` and `check` say it. */
export function retiredGrants(r: RetiredMirrorStatus): string {
  const fix = `run syncmirror forget --mirror ${r.mirror} to revoke it, or put it back in the config`;
  return r.keys === 0
    ? `grants no access; its state is still kept: run syncmirror forget --mirror ${r.mirror} to delete it`
    : `still grants ${r.users} user(s) access to ${r.keys} key(s); ${fix}`;
}

/** A daemon alive on the database, by its last heartbeat. */
export interface ReplicaStatus {
  instance_id: string;
  /** `hostname:pid`. */
  name: string;
  started_at: string;
  last_seen_at: string;
  /** `max_concurrent_mirrors`, and the passes it ran at its last heartbeat. */
  slots: number;
  running: number;
}

export async function buildStatus(
  store: Store,
  mirrors: readonly MirrorConfig[],
  now: Date = new Date(),
): Promise<{ mirrors: MirrorStatus[]; retired_mirrors: RetiredMirrorStatus[]; replicas: ReplicaStatus[] }> {
  // A holder on this host whose process is gone (a killed `sync`, a crashed daemon) runs nothing,
  // though its lease has not run out yet: the next pass takes the mirror over at once.
  const holders = new Map(
    [...(await store.leases.holders())].filter(([, lease]) => !isDeadHereAndNow(lease)),
  );
  const schedules = new Map((await store.schedules.list()).map((s) => [s.mirror, s]));
  const statuses: MirrorStatus[] = [];
  for (const m of mirrors) {
    const schedule = schedules.get(m.name);
    // The pass a replica takes next: a full due sends no since, whatever an idle mirror would send.
    const fullDue = (schedule ? startableDue(schedule) : null)?.mode === "full";
    statuses.push({
      ...(await mirrorStatus(store, m, holders.get(m.name), fullDue)),
      ...scheduleStatus(m, schedule, now),
    });
  }
  const replicas = runningReplicas(await store.replicas.live()).map((r) => ({
    instance_id: r.instanceId,
    name: r.name,
    started_at: r.startedAt,
    last_seen_at: r.seenAt,
    slots: r.slots,
    running: r.running,
  }));
  const retired = await store.mirrors.retired(mirrors.map((m) => m.name));
  return { mirrors: statuses, retired_mirrors: retired, replicas };
}

/** A mirror's pause as `status --json` and the controls' replies show it. */
export function pausedFields(paused: MirrorSchedule["paused"]): {
  paused: boolean;
  paused_since: string | null;
  paused_by: string | null;
} {
  return { paused: paused !== null, paused_since: paused?.at ?? null, paused_by: paused?.by ?? null };
}

function scheduleStatus(mirror: MirrorConfig, schedule: MirrorSchedule | undefined, now: Date) {
  const next = (expression: string) =>
    cronOccurrences(expression, mirror.timezone).next(now)?.toISOString() ?? null;
  return {
    next_incremental_at: next(mirror.incrementalCron),
    next_full_at: next(mirror.fullCron),
    ...pausedFields(schedule?.paused ?? null),
    due: schedule?.due ?? null,
  };
}

async function mirrorStatus(
  store: Store,
  mirror: MirrorConfig,
  lease: Lease | undefined,
  fullDue: boolean,
): Promise<Omit<MirrorStatus, keyof ReturnType<typeof scheduleStatus>>> {
  const state = await store.mirrors.get(mirror.name);
  const pairs = await store.pairs.listForMirror(mirror.name);
  const managed = await store.syncConfigs.find(mirror.name);
  // A changed sync config owes a full pass, whatever the schedule says (sync/sync-mirror.ts).
  const configured = mirror.syncConfigId ?? managed?.syncConfigId ?? null;
  const plan = planPass(pairs, mirror, fullDue || fullOwedBecause(state, managed, configured) !== null);
  const inFlight = await inFlightWithRuns(store, mirror.name);
  return {
    mirror: mirror.name,
    sync_config_id: configured,
    declared_sync_config: mirror.declared
      ? {
          name: mirror.declared.name,
          origin: managed?.origin ?? null,
          applied_at: managed?.appliedAt ?? null,
          last_error: managed?.lastError ?? null,
          last_error_at: managed?.lastErrorAt ?? null,
        }
      : null,
    last_incremental_success_at: state?.lastIncrementalSuccessAt ?? null,
    last_full_success_at: state?.lastFullSuccessAt ?? null,
    last_outcome: state?.lastOutcome ?? null,
    last_outcome_at: state?.lastOutcomeAt ?? null,
    last_message: state?.lastMessage ?? null,
    next_since: plan.since,
    next_mode: plan.mode,
    in_flight: inFlight
      ? {
          trigger_id: inFlight.trigger.triggerId,
          mode: inFlight.trigger.mode,
          state: inFlight.trigger.state,
          since: inFlight.trigger.since,
          runs: inFlight.runs.map((r) => ({
            sync_id: r.syncId,
            user_email: r.userEmail,
            status: r.status,
            ingest: r.ingest,
          })),
        }
      : null,
    live_resources: await store.access.countLive(mirror.name),
    pairs: pairs.filter((p) => p.retiredAt === null).length,
    pairs_awaiting_baseline: await store.pairs.countAwaitingBaseline(mirror.name),
    skipped_pairs: pairs
      .filter((p) => p.retiredAt === null && p.skipReason !== null)
      .map((p) => ({
        user_email: p.userEmail,
        server_instance_id: p.serverInstanceId,
        reason: p.skipReason as string,
      })),
    held_revocations: state?.heldRevocations ?? 0,
    holder: lease?.holderName ?? null,
    holder_instance_id: lease?.holder ?? null,
    lease_expires_at: lease?.expiresAt ?? null,
    lease_epoch: lease?.epoch ?? null,
  };
}

const SETTLED_READS = 5;

/**
 * The trigger in flight and its runs as of one moment. A trigger's runs are written in the
 * transaction that gives it its trigger_id, but on PostgreSQL each read sees the latest commit,
 * so a trigger read before that commit and runs read after it made /status show runs under a
 * trigger without an id. The trigger is read again after its runs; when it moved meanwhile, the
 * pair is read again.
 */
async function inFlightWithRuns(
  store: Store,
  mirror: string,
): Promise<{ trigger: Trigger; runs: Run[] } | undefined> {
  for (let read = 1; ; read++) {
    const trigger = await store.triggers.findInFlight(mirror);
    if (!trigger) return undefined;
    const runs = await store.runs.ofTrigger(trigger.id);
    const again = await store.triggers.findInFlight(mirror);
    const settled =
      again?.id === trigger.id && again.state === trigger.state && again.triggerId === trigger.triggerId;
    if (settled || read === SETTLED_READS) return { trigger, runs };
  }
}
