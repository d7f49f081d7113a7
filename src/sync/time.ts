/** Server timestamps are normalised to `toISOString()` form so that they compare as text. */
export function serverTime(value: string): string {
  const time = exportTime(value);
  if (time === null) throw new TypeError(`not a timestamp: ${JSON.stringify(value)}`);
  return time;
}

/**
 * An export's `modified_at` / `fetched_at` in `toISOString()` form (UTC, milliseconds), so every
 * store holds and serves the same string whatever offset the export wrote. One that is not a time,
 * or whose year is outside 0001-9999 (`0000-...`, `-000001-...`, `+275760-...`: PostgreSQL's
 * timestamptz refuses them, which would fail every page holding one), is null.
 */
export function exportTime(value: string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) return null;
  const iso = new Date(ms).toISOString();
  return FOUR_DIGIT_YEAR.test(iso) ? iso : null;
}

/** Years 0001 to 9999, as ISO 8601 writes them without an expanded representation. */
const FOUR_DIGIT_YEAR = /^(?!0000)\d{4}-/;
