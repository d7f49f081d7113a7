/**
 * Numbers a double cannot hold (an id past 2^53, 1e400; on a page with one of those, also a decimal
 * of more than 17 digits), kept as the service wrote them in a resource's JSON parts, from the
 * export page to the table and from the table to the change feed: JSON.parse would round them (or
 * turn 1e400 into null on the way back out), and the mirror promises those parts as exported.
 *
 * While parsing, each such number becomes a marker string carrying its literal (on an export page,
 * only inside a resource's JSON parts: elsewhere it is turned back into a number at once), and
 * `stringifyExact` writes the markers back as the literal. The marker holds a per-process random
 * nonce, so no text from the service can pose as one.
 */
import { randomBytes } from "node:crypto";

const NONCE = randomBytes(8).toString("hex");
const MARKER = `\u0000${NONCE}:`;
/** The marker as JSON.stringify writes it (U+0000 escaped). */
const MARKER_WRITTEN = new RegExp(`"\\\\u0000${NONCE}:([-+.0-9eE]+)"`, "g");

/** A string literal (skipped whole) or a number token. */
const TOKEN = /"[^"\\]*(?:\\.[^"\\]*)*"|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
/** Literals kept verbatim stay within what every store's JSON type accepts (a numeric of bounded scale). */
const MAX_LITERAL_CHARS = 400;
const MAX_EXPONENT = 10_000;

/** The decimal value of a number literal as digits and exponent, for comparing two spellings. */
function decimalValue(literal: string): string {
  const match = /^[-+]?(\d*)(?:\.(\d*))?(?:[eE]([-+]?\d+))?$/.exec(literal);
  if (!match) return literal;
  const [, whole = "", fraction = "", exponent = "0"] = match;
  let digits = `${whole}${fraction}`.replace(/^0+/, "");
  let scale = Number(exponent) - fraction.length;
  const trailing = digits.length - digits.replace(/0+$/, "").length;
  digits = digits.slice(0, digits.length - trailing);
  scale += trailing;
  if (digits === "") return "0";
  return `${literal.startsWith("-") ? "-" : ""}${digits}e${scale}`;
}

function rounds(literal: string): boolean {
  if (literal.length > MAX_LITERAL_CHARS) return false;
  const exponent = /[eE]([-+]?\d+)$/.exec(literal)?.[1];
  if (exponent !== undefined && Math.abs(Number(exponent)) > MAX_EXPONENT) return false;
  const value = Number(literal);
  return !Number.isFinite(value) || decimalValue(literal) !== decimalValue(String(value));
}

const RESOURCE_JSON_PARTS = new Set(["fields", "metadata", "relations", "attachments", "provenance"]);

/**
 * Whether a resource's JSON parts, as JSON.parse read them, hold a value a literal past a double's
 * reach leaves (an integer past 2^53, an infinity): only then is the page scanned token by token,
 * which costs several times JSON.parse. Checked on the parsed page because a scan of the text
 * would have to skip every string, which costs as much as the token scan itself. A page whose only
 * such literals are decimals of more than 17 digits or values below a double's range is kept as
 * JSON.parse reads it.
 */
function mayHaveRounded(page: unknown): boolean {
  if (page === null || typeof page !== "object") return false;
  const { resources } = page as { resources?: unknown };
  if (!Array.isArray(resources)) return false;
  return resources.some(
    (r) =>
      r !== null &&
      typeof r === "object" &&
      Object.entries(r).some(([k, v]) => RESOURCE_JSON_PARTS.has(k) && holdsRounded(v)),
  );
}

function holdsRounded(value: unknown): boolean {
  // A loop, not recursion: a resource nested deeper than the stack must still reach the check that
  // rejects it alone, not end the page in a RangeError.
  const todo: unknown[] = [value];
  while (todo.length > 0) {
    const v = todo.pop();
    if (typeof v === "number") {
      if (!Number.isFinite(v) || (Number.isInteger(v) && !Number.isSafeInteger(v))) return true;
    } else if (v !== null && typeof v === "object") for (const child of Object.values(v)) todo.push(child);
  }
  return false;
}

function asNumbers(value: unknown): unknown {
  if (typeof value === "string") return value.startsWith(MARKER) ? Number(value.slice(MARKER.length)) : value;
  if (Array.isArray(value)) return value.map(asNumbers);
  if (value !== null && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, asNumbers(v)]));
  return value;
}

/**
 * An export page's body: JSON.parse, except that numbers a double would round keep their literal
 * inside each resource's JSON parts (for `stringifyExact`).
 */
export function parseExportPageText(text: string): unknown {
  const plain: unknown = JSON.parse(text);
  if (!mayHaveRounded(plain)) return plain;
  const page = parseMarked(text);
  if (page === null || typeof page !== "object" || Array.isArray(page)) return asNumbers(page);
  const { resources, ...rest } = page as Record<string, unknown>;
  const keptResources = Array.isArray(resources)
    ? resources.map((r) =>
        r !== null && typeof r === "object" && !Array.isArray(r)
          ? Object.fromEntries(
              Object.entries(r).map(([k, v]) => [k, RESOURCE_JSON_PARTS.has(k) ? v : asNumbers(v)]),
            )
          : asNumbers(r),
      )
    : asNumbers(resources);
  return { ...(asNumbers(rest) as object), ...(resources === undefined ? {} : { resources: keptResources }) };
}

/**
 * A stored JSON part (a column the mirror wrote with `stringifyExact`), read so that
 * `stringifyExact` writes it back digit for digit: the change feed serves it as the table holds it.
 */
export function parseJsonExact(text: string): unknown {
  const plain: unknown = JSON.parse(text);
  return holdsRounded(plain) ? parseMarked(text) : plain;
}

/** JSON.parse with every number a double would round held as a marker carrying its literal. */
function parseMarked(text: string): unknown {
  return JSON.parse(
    text.replace(TOKEN, (token) =>
      token.startsWith('"') || !rounds(token) ? token : JSON.stringify(`${MARKER}${token}`),
    ),
  );
}

/** JSON.stringify, writing each number `parseExportPageText` or `parseJsonExact` kept back as its literal. */
export function stringifyExact(value: unknown): string {
  const json = JSON.stringify(value);
  return json.includes(NONCE) ? json.replace(MARKER_WRITTEN, "$1") : json;
}
