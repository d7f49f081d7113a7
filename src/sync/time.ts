/** Server timestamps are normalised to `toISOString()` form so that they compare as text. */
export function serverTime(value: string): string {
  const time = exportTime(value);
  if (time === null) throw new TypeError(`not a timestamp: ${JSON.stringify(value)}`);
  return time;
}

/**
 * An export's `modified_at` / `fetched_at` in `toISOString()` form (UTC, milliseconds), so every
 * store holds and serves the same string whatever offset the export wrote; one that is not a time
 * is null (PostgreSQL's timestamptz could not hold it).
 */
export function exportTime(value: string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}
