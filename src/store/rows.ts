/**
 * Database rows to domain objects, the same for both dialects once their JSON columns are
 * decoded (SQLite keeps JSON as text, PostgreSQL as jsonb, which pg parses), and the one answer
 * to a row that should be there and is not.
 */
import { DatabaseError } from "../errors.js";
import type { PendingContinue, Run, SkippedPairRecord, Trigger } from "./types.js";

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

/** The row `what` names, which the store wrote earlier: gone means the database changed under us. */
export function found<R>(row: R | undefined, what: string): R {
  if (row === undefined) {
    throw new DatabaseError(
      `${what} vanished from the database: something other than syncmirror changed it; run again, and restore the database from a backup if this repeats`,
    );
  }
  return row;
}
