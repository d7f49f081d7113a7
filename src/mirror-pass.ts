/**
 * What a mirror is owed, run under its lease (docs/scaling-out.md#scheduling, docs/scaling-out.md): the daemon's passes,
 * and `trigger`'s when no daemon runs. The lease is the claim: once it is held, the pass checks
 * again that something is owed (another process may have run it meanwhile), then resumes the
 * trigger left in flight (never POSTing it again) and runs the due pass, whose due is taken off the
 * schedule in the transaction that writes its trigger's intent (`sync/trigger.ts`).
 */
import type { MirrorConfig } from "./config.js";
import { withMirrorLease } from "./mirror-lease.js";
import type { Runtime } from "./runtime.js";
import { consumeDue, startableDue } from "./store/schedule-rules.js";
import type { LeaseHolder } from "./store/types.js";
import type { MirrorSummary } from "./sync/summary.js";
import { syncMirror, withFinishedFirst } from "./sync/sync-mirror.js";
import { preparePass, type ReconcileDeps } from "./sync-configs/reconcile.js";

export interface OwedPassDeps {
  runtime: Runtime;
  holder: LeaseHolder;
  /** The daemon's start-up applies that waited (`ReconcileDeps.startupApplyOwed`). */
  startupApplyOwed?: Set<string>;
}

/**
 * Runs what `mirror` is owed. `started(true)` once the lease is held and something is owed,
 * `started(false)` when another process holds the lease or nothing is owed any more. Resolves with
 * the pass's summary, or undefined when nothing ran. A lost lease rejects (LeaseLostError, logged).
 * With `resumeOnly` (a pass beyond the scheduler's slots), only the trigger left in flight is owed:
 * a due pass, or a full owed after it, is left for a slot.
 */
export async function runOwedPass(
  { runtime, holder, startupApplyOwed }: OwedPassDeps,
  mirror: MirrorConfig,
  signal: AbortSignal,
  started: (running: boolean) => void,
  { resumeOnly = false }: { resumeOnly?: boolean } = {},
): Promise<MirrorSummary | undefined> {
  const { store, config, log, metrics } = runtime;
  const leased = await withMirrorLease(
    { store, mirror: mirror.name, holder, leaseSeconds: config.database.leaseSeconds, signal, log, metrics },
    async (passSignal, fence) => {
      const schedule = await store.schedules.find(mirror.name);
      const due = schedule && !resumeOnly ? startableDue(schedule) : null;
      if (!due && !(await store.triggers.findInFlight(mirror.name))) {
        started(false);
        return undefined;
      }
      started(true);
      const deps = reconcileDeps(runtime, passSignal, startupApplyOwed);
      const { bound, deferred } = await preparePass(mirror, deps);
      if (!bound) {
        // Logged by preparePass; the next scheduled time tries again.
        if (due) await dropDue(runtime, mirror.name);
        return undefined;
      }
      const ctx = runtime.syncContext(passSignal, fence, holder);
      const options = {
        full: due?.mode === "full",
        allowMassDelete: false,
        dryRun: false,
        servesDue: due !== null,
        resumeOnly,
      };
      if (!deferred || !due || resumeOnly) return syncMirror(bound, ctx, options);
      // The declaration's change waited for the trigger in flight: finish that one, then apply the
      // change before the due pass triggers, or the due pass would collect with the old settings.
      const resumed = await syncMirror(bound, ctx, { ...options, resumeOnly: true });
      if (await store.triggers.findInFlight(mirror.name)) return resumed;
      const next = await preparePass(mirror, deps);
      if (!next.bound) return resumed;
      return withFinishedFirst(await syncMirror(next.bound, ctx, options), resumed);
    },
  );
  if (leased.taken) return leased.value;
  started(false);
  return undefined;
}

async function dropDue(runtime: Runtime, mirror: string): Promise<void> {
  await runtime.store.transaction(async (tx) => {
    const schedule = await tx.schedules.lock(mirror);
    const dropped = schedule && consumeDue(schedule, "full");
    if (dropped) await tx.schedules.save(dropped.schedule);
  });
}

export function reconcileDeps(
  runtime: Runtime,
  signal: AbortSignal,
  startupApplyOwed?: Set<string>,
): ReconcileDeps {
  const { config, readConfig, store, api, log, metrics } = runtime;
  const deps = { config, readConfig, store, api, log, metrics, signal, now: () => new Date() };
  return startupApplyOwed ? { ...deps, startupApplyOwed } : deps;
}
