/**
 * Database rows to domain objects, the same for both dialects once their JSON columns are
 * decoded (SQLite keeps JSON as text, PostgreSQL as jsonb, which pg parses), and the one answer
 * to a row that should be there and is not.
 */
import { DatabaseError } from "../errors.js";
import type {
  ControlAction,
  ControlRecord,
  DueReason,
  MirrorSchedule,
  Mode,
  PendingContinue,
  Run,
  RunSource,
  SkippedPairRecord,
  Trigger,
} from "./types.js";

/** A JSON column's value as the driver returns it, decoded. */
export type DecodeJson = (value: unknown) => unknown;

/** SQLite: JSON text (or NULL) parsed. */
export const parseJsonText: DecodeJson = (value) => (value === null ? null : JSON.parse(value as string));

/** PostgreSQL: jsonb arrives parsed. */
export const keepJson: DecodeJson = (value) => value ?? null;

type TriggerColumns = Omit<Trigger, "skipped"> & { skipped: unknown; summary: unknown };
type RunColumns = Omit<Run, "continuePending"> & { continuePending: unknown; diagnostics: unknown };

export function toTrigger(row: TriggerColumns, decode: DecodeJson): Trigger {
  const { summary: _summary, skipped, ...rest } = row;
  return { ...rest, skipped: decode(skipped) as SkippedPairRecord[] | null };
}

export function toRun(row: RunColumns, decode: DecodeJson): Run {
  const { diagnostics: _diagnostics, continuePending, ...rest } = row;
  return { ...rest, continuePending: decode(continuePending) as PendingContinue | null };
}

/** Sources as `sourcesOfTrigger` returns them: each run's, in the order read. */
export function groupBySyncId(rows: readonly RunSource[]): Map<string, RunSource[]> {
  const byRun = new Map<string, RunSource[]>();
  for (const row of rows) {
    const sources = byRun.get(row.syncId);
    if (sources) sources.push(row);
    else byRun.set(row.syncId, [row]);
  }
  return byRun;
}

/** The row `what` names, which the store wrote earlier: gone means the database changed under us. */
export function found<R>(row: R | undefined, what: string): R {
  if (row === undefined) {
    throw new DatabaseError(
      `${what} vanished from the database: something other than syncmirror changed it; run again, and restore the database from a backup if this repeats`,
    );
  }
  return row;
}

/** A `schedules` row as both dialects' drizzle tables read it (times already ISO text). */
export interface ScheduleColumns {
  mirror: string;
  incrementalSlot: string;
  fullSlot: string;
  dueMode: Mode | null;
  dueReason: DueReason | null;
  dueAt: string | null;
  dueBy: string | null;
  pausedAt: string | null;
  pausedBy: string | null;
}

export function toSchedule(row: ScheduleColumns): MirrorSchedule {
  return {
    mirror: row.mirror,
    incrementalSlot: row.incrementalSlot,
    fullSlot: row.fullSlot,
    due:
      row.dueMode && row.dueReason && row.dueAt
        ? { mode: row.dueMode, reason: row.dueReason, since: row.dueAt, by: row.dueBy }
        : null,
    paused: row.pausedAt ? { at: row.pausedAt, by: row.pausedBy ?? "" } : null,
  };
}

export function scheduleColumns(s: MirrorSchedule): ScheduleColumns {
  return {
    mirror: s.mirror,
    incrementalSlot: s.incrementalSlot,
    fullSlot: s.fullSlot,
    dueMode: s.due?.mode ?? null,
    dueReason: s.due?.reason ?? null,
    dueAt: s.due?.since ?? null,
    dueBy: s.due?.by ?? null,
    pausedAt: s.paused?.at ?? null,
    pausedBy: s.paused?.by ?? null,
  };
}

export function toControl(row: Omit<ControlRecord, "action"> & { action: string }): ControlRecord {
  return { ...row, action: row.action as ControlAction };
}
