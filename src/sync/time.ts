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
  return canonicalZulu(value) ?? parsedTime(value);
}

/**
 * The form the service writes resource times in (`2026-11-20T14:31:00Z`, milliseconds when there
 * are any), read without parsing a date: two per row, this is a few percent of ingest's CPU
 * otherwise. A time it does not recognise, or that is not a real date, goes to `parsedTime`.
 */
const ZULU = /^(\d{4})-(\d\d)-(\d\d)T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{3})?Z$/;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function canonicalZulu(value: string): string | undefined {
  const m = ZULU.exec(value);
  if (m === null) return undefined;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1];
  if (year === 0 || days === undefined || day < 1 || day > days) return undefined;
  return m[4] === undefined ? `${value.slice(0, 19)}.000Z` : value;
}

/** A date and time of day with no `Z` or offset, which Date.parse would read in the local time zone. */
const NO_OFFSET = /^\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?$/;

/** A time the service wrote without an offset is UTC, as every time it writes: never the host's zone. */
function parsedTime(value: string): string | null {
  const ms = Date.parse(NO_OFFSET.test(value) ? `${value.replace(" ", "T")}Z` : value);
  if (Number.isNaN(ms)) return null;
  const iso = new Date(ms).toISOString();
  return FOUR_DIGIT_YEAR.test(iso) ? iso : null;
}

/** Years 0001 to 9999, as ISO 8601 writes them without an expanded representation. */
const FOUR_DIGIT_YEAR = /^(?!0000)\d{4}-/;
