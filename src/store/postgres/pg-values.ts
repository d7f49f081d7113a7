/**
 * What SQLite stores but PostgreSQL refuses, turned into the nearest value Postgres holds, so a
 * single odd resource never fails its whole page on one dialect only:
 * - text cannot contain NUL; jsonb cannot contain `\u0000` nor an unpaired surrogate escape
 *   (SQLite keeps both): each becomes U+FFFD, as the sync code already does for lone surrogates
 *   in text;
 * - a `timestamptz` holds only a time: an export time that is not one is stored as NULL.
 */

const REPLACEMENT = "\uFFFD";
/** An escape is one only after an even run of backslashes (`\\u0000` is a backslash, then text). */
const UNESCAPED = String.raw`(?<=(?:^|[^\\])(?:\\\\)*)`;
const NUL_ESCAPE = new RegExp(String.raw`${UNESCAPED}\\u0000`, "g");
const HIGH = String.raw`\\u[dD][89abAB][0-9a-fA-F]{2}`;
const LOW = String.raw`\\u[dD][c-fC-F][0-9a-fA-F]{2}`;
const LONE_SURROGATE_ESCAPE = new RegExp(`${UNESCAPED}(?:${HIGH}(?!${LOW})|(?<!${HIGH})${LOW})`, "g");
const MAY_NEED_REPAIR = /\\u(?:0000|[dD][89a-fA-F])/;

export function pgText<T extends string | null>(value: T): T {
  return (value?.includes("\0") ? value.replaceAll("\0", REPLACEMENT) : value) as T;
}

/** JSON text as jsonb accepts it. */
export function pgJson(json: string | null): string | null {
  if (json === null || !MAY_NEED_REPAIR.test(json)) return json;
  return json.replace(NUL_ESCAPE, String.raw`\ufffd`).replace(LONE_SURROGATE_ESCAPE, String.raw`\ufffd`);
}

/** An export time as `timestamptz` input: ISO when it parses, else NULL. */
export function pgTime(value: string | null): string | null {
  if (value === null) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}
