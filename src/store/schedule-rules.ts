/**
 * What happens to a mirror's schedule (docs/scaling-out.md#scheduling, docs/console-history.md), the one place the
 * rules live: the scheduler, the controls and the pass's intent apply them to the row they read
 * (locked) inside one transaction, whichever the dialect. Pure: a rule returns the new schedule.
 *
 * - A scheduled time is recorded once (the slot only moves forward), by whichever process records
 *   it first; a paused mirror's is recorded and skipped.
 * - One due pass at most: a time that falls while one is due, or while the mirror's pass runs, is
 *   coalesced into it, and a full raises a due incremental to full (a full snapshot covers it).
 * - A request (`trigger`) is due at once, paused or not; pausing drops a scheduled due, not a
 *   requested one; resuming spends every time that fell before it.
 * - A pass consumes the due it covers when it writes its trigger's intent: a full covers any due,
 *   an incremental only an incremental one.
 */
import type { Due, DueReason, MirrorSchedule, Mode } from "./types.js";

/** What recording a scheduled time did. */
export type TickOutcome =
  /** The mirror became due. */
  | "due"
  /** A pass was already due: this time adds nothing but perhaps its mode. */
  | "coalesced"
  /** An incremental falling while a full is due: the full covers it (not a skip). */
  | "superseded"
  /** The mirror is paused: the time is skipped. */
  | "paused"
  /** This time (or a later one) was recorded already, by another process. */
  | "seen";

const slotOf = (mode: Mode) => (mode === "full" ? "fullSlot" : "incrementalSlot");

/** A schedule first seen: its slots at the latest scheduled times, so nothing earlier is owed. */
export function newSchedule(mirror: string, slots: { incremental: string; full: string }): MirrorSchedule {
  return { mirror, incrementalSlot: slots.incremental, fullSlot: slots.full, due: null, paused: null };
}

export function recordTick(
  schedule: MirrorSchedule,
  mode: Mode,
  at: string,
  reason: Exclude<DueReason, "requested">,
): { schedule: MirrorSchedule; outcome: TickOutcome } {
  if (at <= schedule[slotOf(mode)]) return { schedule, outcome: "seen" };
  const recorded = { ...schedule, [slotOf(mode)]: at };
  if (schedule.paused) return { schedule: recorded, outcome: "paused" };
  const due = schedule.due;
  if (!due) return { schedule: { ...recorded, due: { mode, reason, since: at, by: null } }, outcome: "due" };
  const superseded = mode === "incremental" && due.mode === "full";
  return {
    schedule: { ...recorded, due: raise(due, mode, reason, null) },
    outcome: superseded ? "superseded" : "coalesced",
  };
}

/** `trigger`: a pass of `mode` due now, run even while the mirror is paused. */
export function requestPass(schedule: MirrorSchedule, mode: Mode, by: string, at: string): MirrorSchedule {
  const due = schedule.due;
  return {
    ...schedule,
    due: due ? raise(due, mode, "requested", by) : { mode, reason: "requested", since: at, by },
  };
}

/**
 * The due pass a pass of `mode` covers, taken off the schedule; null when none is due or it
 * needs more (a due full, an incremental pass). A paused mirror's scheduled due never exists.
 */
export function consumeDue(
  schedule: MirrorSchedule,
  mode: Mode,
): { schedule: MirrorSchedule; due: Due } | null {
  const due = schedule.due;
  if (!due || (due.mode === "full" && mode !== "full")) return null;
  return { schedule: { ...schedule, due: null }, due };
}

/** Null when already paused (the first pause stays on record). */
export function pauseSchedule(schedule: MirrorSchedule, by: string, at: string): MirrorSchedule | null {
  if (schedule.paused) return null;
  const keep = schedule.due?.reason === "requested" ? schedule.due : null;
  return { ...schedule, paused: { at, by }, due: keep };
}

/**
 * Null when not paused. Times skipped while paused stay skipped: the next one runs. The slots move
 * up to the resume, so a time that fell while paused with no process to record (and skip) it is
 * not caught up at the next start either.
 */
export function resumeSchedule(schedule: MirrorSchedule, at: string): MirrorSchedule | null {
  if (!schedule.paused) return null;
  const upTo = (slot: string) => (slot < at ? at : slot);
  return {
    ...schedule,
    paused: null,
    incrementalSlot: upTo(schedule.incrementalSlot),
    fullSlot: upTo(schedule.fullSlot),
  };
}

/** The pass a replica may start now: a due one, unless paused (a requested one runs anyway). */
export function startableDue(schedule: MirrorSchedule): Due | null {
  const due = schedule.due;
  if (!due || (schedule.paused && due.reason !== "requested")) return null;
  return due;
}

/**
 * One due pass: the fuller mode wins, it stays due since it first was, and a request marks it
 * requested (so a pause does not drop what an operator asked for).
 */
function raise(due: Due, mode: Mode, reason: DueReason, by: string | null): Due {
  const raised = mode === "full" && due.mode === "incremental";
  const requested = due.reason === "requested" ? due : reason === "requested" ? { reason, by } : undefined;
  return {
    mode: raised ? "full" : due.mode,
    since: due.since,
    reason: requested?.reason ?? (raised ? reason : due.reason),
    by: requested ? requested.by : raised ? by : due.by,
  };
}
