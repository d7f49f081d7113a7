/**
 * Scheduled times into the database (docs/scaling-out.md#scheduling). Each look, for every mirror and mode, the
 * latest scheduled time at or before now that this process has not recorded yet is recorded on the
 * mirror's schedule (`store/schedule-rules.ts`): the first process to record it makes the mirror
 * due, the others find it recorded. A look after a gap (a start-up, the database back after an
 * outage) therefore records only the latest time that fell meanwhile: run once, never once per
 * missed time. Only the most recent occurrence counts, so the catch-up looks back one period of
 * the expression (a daily full at most a day, a weekly one a week), and none that is already
 * followed by a newer time.
 *
 * A mirror first seen owes nothing from before, unless it has passes on record: then a scheduled
 * time after its newest pass of that mode (any mode, for incrementals) is owed (an upgrade from a
 * version without schedules catches up the full it missed while stopped).
 */
import type { MirrorConfig } from "./config.js";
import { type CronOccurrences, cronOccurrences } from "./cron-occurrences.js";
import type { Logger } from "./log.js";
import type { Metrics } from "./metrics.js";
import type { SkipReason } from "./skip-reasons.js";
import { newSchedule, recordTick, type TickOutcome } from "./store/schedule-rules.js";
import { isDatabaseError, type Store, type StoreOps } from "./store/store.js";
import { type MirrorSchedule, MODES, type Mode } from "./store/types.js";

export interface TickRecorderDeps {
  mirrors: readonly MirrorConfig[];
  store: Store;
  log: Logger;
  metrics: Metrics;
}

export interface TickRecorder {
  /** Records what fell by `now`; a database that does not answer is counted and tried again next look. */
  record(now: Date): Promise<void>;
  /** The next scheduled time of any mirror after the last look (null when none within a year). */
  nextAt(): Date | null;
}

interface Timeline {
  mirror: string;
  mode: Mode;
  occurrences: CronOccurrences;
  previous: Date | null;
  next: Date | null;
  /** The latest time this process recorded or found recorded. */
  recordedMs: number;
  /** The time last counted as `db_unreachable` (counted once however many looks fail). */
  unreachableMs: number;
  /** When `previous` and `next` were computed. */
  computedMs: number;
}

/** How often an expression with no time within a year is looked at again. */
const RECOMPUTE_EMPTY_MS = 86_400_000;

export function createTickRecorder(deps: TickRecorderDeps): TickRecorder {
  const { store, log, metrics } = deps;
  /** This process's first look: a time that fell before it is a catch-up (no process of ours ran). */
  let startedMs: number | undefined;
  const timelines: Timeline[] = deps.mirrors.flatMap((m) =>
    MODES.map((mode) => ({
      mirror: m.name,
      mode,
      occurrences: cronOccurrences(mode === "full" ? m.fullCron : m.incrementalCron, m.timezone),
      previous: null,
      next: null,
      recordedMs: Number.NEGATIVE_INFINITY,
      unreachableMs: Number.NEGATIVE_INFINITY,
      computedMs: Number.NEGATIVE_INFINITY,
    })),
  );

  function advance(t: Timeline, now: Date): void {
    const until = t.next?.getTime() ?? t.computedMs + RECOMPUTE_EMPTY_MS;
    if (now.getTime() < until) return;
    t.previous = t.occurrences.previous(now);
    t.next = t.occurrences.next(now);
    t.computedMs = now.getTime();
  }

  async function recordOne(t: Timeline): Promise<void> {
    const at = t.previous;
    if (at === null || at.getTime() <= t.recordedMs) return;
    // It fell before this process looked, or while the database could not be reached.
    const missed = at.getTime() < (startedMs ?? 0) || at.getTime() === t.unreachableMs;
    const reason = missed ? "catch-up" : "schedule";
    let outcome: TickOutcome;
    try {
      outcome = await store.transaction(async (tx) => {
        const existing = await tx.schedules.lock(t.mirror);
        const recorded = recordTick(
          existing ?? (await firstSeen(tx, t.mirror)),
          t.mode,
          at.toISOString(),
          reason,
        );
        if (recorded.outcome !== "seen" || !existing) await tx.schedules.save(recorded.schedule);
        return recorded.outcome;
      });
    } catch (error) {
      if (!isDatabaseError(error)) throw error;
      if (t.unreachableMs !== at.getTime()) {
        t.unreachableMs = at.getTime();
        skip(t, "db_unreachable", at, "the database could not be reached; it is recorded once it answers");
      }
      return;
    }
    t.recordedMs = at.getTime();
    await report(t, outcome, at, reason);
  }

  /** A schedule first seen: slots at the latest times, or at the newest pass when that is older. */
  async function firstSeen(tx: StoreOps, mirror: string): Promise<MirrorSchedule> {
    const slot = async (mode: Mode) => {
      const t = timelines.find((x) => x.mirror === mirror && x.mode === mode) as Timeline;
      const latest = (t.previous ?? new Date(0)).toISOString();
      const lastPass = await tx.triggers.lastIntentAt(mirror, mode === "full" ? ["full"] : MODES);
      return lastPass !== undefined && lastPass < latest ? lastPass : latest;
    };
    return newSchedule(mirror, { incremental: await slot("incremental"), full: await slot("full") });
  }

  async function report(t: Timeline, outcome: TickOutcome, at: Date, reason: string): Promise<void> {
    const fields = { mirror: t.mirror, mode: t.mode, scheduled_at: at.toISOString() };
    switch (outcome) {
      case "due":
        // Due, yet it started no pass: the mirror's pass runs, and the one due after it covers this
        // time (later times falling meanwhile are coalesced into that pass, counted the same way).
        if (await isInFlight(t.mirror))
          skip(t, "in_flight", at, "the mirror's pass is in flight; a pass is due after it");
        if (reason === "catch-up")
          log.info(
            fields,
            `catching up: the ${t.mode} pass scheduled at ${fields.scheduled_at} fell while no process could record it`,
          );
        else log.debug(fields, "pass due");
        return;
      case "paused":
        return skip(t, "paused", at, "the mirror is paused");
      case "coalesced":
        return skip(t, await coalescedInto(t.mirror), at, "a pass of the mirror is already due");
      case "superseded":
        log.debug(fields, "incremental covered by the full pass due");
        return;
      case "seen":
        return;
    }
  }

  /** Why a pass was already due: it follows the mirror's pass in flight (running, or a dead replica's trigger), or waits for a slot. */
  async function coalescedInto(mirror: string): Promise<SkipReason> {
    return (await isInFlight(mirror)) ? "in_flight" : "waiting";
  }

  /** The mirror's pass runs (its lease is held) or its trigger is in flight; false when that cannot be read. */
  async function isInFlight(mirror: string): Promise<boolean> {
    try {
      return (
        (await store.leases.holders()).has(mirror) ||
        (await store.triggers.findInFlight(mirror)) !== undefined
      );
    } catch {
      return false;
    }
  }

  function skip(t: Timeline, reason: SkipReason, at: Date, why: string): void {
    metrics.ticksSkipped.inc({ mirror: t.mirror, mode: t.mode, reason });
    log.debug(
      { mirror: t.mirror, mode: t.mode, reason, scheduled_at: at.toISOString() },
      `tick skipped: ${why}`,
    );
  }

  return {
    async record(now) {
      startedMs ??= now.getTime();
      for (const t of timelines) advance(t, now);
      // Fulls first: an incremental falling at the same time is then coalesced into the due full.
      for (const mode of ["full", "incremental"] as const)
        for (const t of timelines) if (t.mode === mode) await recordOne(t);
    },
    nextAt() {
      const times = timelines.flatMap((t) => (t.next ? [t.next.getTime()] : []));
      return times.length > 0 ? new Date(Math.min(...times)) : null;
    },
  };
}
