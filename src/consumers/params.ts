/**
 * The consumer endpoints' parameters, shared by HTTP (`/v1/changes`, `/v1/search`) and the CLI
 * (`changes`, `search`): one zod schema each, so both refuse the same input with the same words.
 */
import { z } from "zod";
import { SearchQueryError, UsageError, unknownMirrorMessage } from "../errors.js";
import { emptyQueryProblem, refusedQueryProblem } from "./search-terms.js";

export const FEED_MAX_LIMIT = 1000;
export const FEED_MAX_WAIT_SECONDS = 60;
export const SEARCH_MAX_LIMIT = 100;

/**
 * A whole number in digits between `min` and `max` (query strings and CLI flags are text). Digits
 * beyond any number's reach are out of range, not "not digits": they get the bound they passed.
 */
export const integer = (min: number, max: number) =>
  z
    .string()
    .regex(/^-?\d+$/, "must be a whole number written in digits")
    .transform((text, ctx) => {
      const negative = text.startsWith("-");
      const digits = text.replace(/^-?0*/, "");
      // 16 digits hold every safe integer; more cannot be exact, and are beyond any bound here.
      const value = digits.length > 16 ? (negative ? -Infinity : Infinity) : Number(text);
      if (value < min) ctx.addIssue({ code: "custom", message: tooSmall(min) });
      else if (value > max) ctx.addIssue({ code: "custom", message: `is too large: must be at most ${max}` });
      else return value;
      return z.NEVER;
    });

/**
 * Seconds from 0, fractions allowed (`wait=0.5`: a client polling often need not wait a whole
 * second), in plain digits: no exponent, no sign but a minus (which is too small). Above `max` it
 * is `max`, as a page limit is: a long poll that answers empty sooner is asked again.
 */
export const seconds = (max: number) =>
  z
    .string()
    .regex(/^-?(?:\d+(?:\.\d*)?|\.\d+)$/, "must be a number of seconds written in digits")
    .transform((text, ctx) => {
      const value = Number(text);
      if (value >= 0) return Math.min(value, max);
      ctx.addIssue({ code: "custom", message: tooSmall(0) });
      return z.NEVER;
    });

/**
 * A page size: 1 or more, `fallback` when not given. Above `max` it is `max`: a client asking for
 * more than a page holds gets a full page and reads on as from any other (`has_more`,
 * `next_after`, `next_before`), rather than a refusal for wanting everything at once.
 */
export const pageLimit = (max: number, fallback: number) =>
  integer(1, Number.POSITIVE_INFINITY)
    .transform((n) => Math.min(n, max))
    .default(fallback);

const tooSmall = (min: number) => (min === 0 ? "must be 0 or more" : `must be at least ${min}`);

export const mirrorName = z.string().regex(/^[a-z0-9_-]+$/, "must be a mirror name ([a-z0-9_-]+)");

const FeedParams = z.strictObject({
  // Not given: from the start, as `after=0` (a new consumer's first read).
  after: integer(0, Number.MAX_SAFE_INTEGER).default(0),
  limit: pageLimit(FEED_MAX_LIMIT, 100),
  wait: seconds(FEED_MAX_WAIT_SECONDS).default(0),
  mirror: mirrorName.optional(),
});

const SearchParams = z.strictObject({
  user: z.string().trim().min(1, "is required: search always runs as one user").max(320),
  // A control character (a NUL PostgreSQL cannot hold, a tab) separates words, as a space does.
  q: z.preprocess(
    (v) => (typeof v === "string" ? v.replace(/\p{Cc}/gu, " ") : v),
    z
      .string()
      .trim()
      .min(1, "is required")
      .max(1000, "must be at most 1000 characters")
      .superRefine((q, ctx) => {
        // An empty query is already "is required".
        const problem = q === "" ? undefined : refusedQueryProblem(q);
        if (problem) ctx.addIssue({ code: "custom", message: problem });
      }),
  ),
  limit: pageLimit(SEARCH_MAX_LIMIT, 20),
  mirror: mirrorName.optional(),
});

export type FeedParams = z.infer<typeof FeedParams>;
export type SearchParams = z.infer<typeof SearchParams>;
type Raw = Record<string, string | undefined>;
/** How the caller names each parameter in messages: the CLI says `--after` and `QUERY`; HTTP its own names. */
export type ParamNames = Readonly<Record<string, string>>;

/**
 * Throws UsageError (HTTP 400, CLI exit 2) naming each bad parameter. `mirror` may also name a
 * mirror removed from the config that the database still `known`s: its consumer reads on to hear
 * of the access `forget` revoked (recorded under its name).
 */
export async function parseFeedParams(
  raw: Raw,
  mirrors: readonly string[],
  known: (mirror: string) => Promise<boolean>,
  names: ParamNames = {},
): Promise<FeedParams> {
  const params = parse(FeedParams, raw, {}, names);
  if (params.mirror !== undefined && !mirrors.includes(params.mirror) && (await known(params.mirror)))
    return params;
  return checkMirror(params, mirrors, names);
}

export function parseSearchParams(
  raw: Raw,
  mirrors: readonly string[],
  names: ParamNames = {},
): SearchParams {
  const params = checkMirror(
    parse(SearchParams, raw, { user: "is required: search always runs as one user" }, names),
    mirrors,
    names,
  );
  // Well-formed parameters, but a query the index cannot search: the same error, worded alike
  // (the caller names the parameter), as a query it cannot parse (`SEARCH_QUERY_INVALID`).
  const empty = emptyQueryProblem(params.q);
  if (empty) throw new SearchQueryError(empty);
  return params;
}

/**
 * Any endpoint's parameters (the console's too): `schema` parsed, then `mirror` checked against the
 * config. Throws UsageError (HTTP 400, CLI exit 2) naming each bad parameter.
 */
export function parseParams<T extends { mirror?: string | undefined }>(
  schema: z.ZodType<T>,
  raw: Raw,
  mirrors: readonly string[],
  names: ParamNames = {},
): T {
  return checkMirror(parse(schema, raw, {}, names), mirrors, names);
}

/** Query-string parameters as one object; a parameter given twice is refused, not guessed at. */
export function queryParams(search: URLSearchParams): Raw {
  const raw: Raw = {};
  for (const [key, value] of search) {
    if (key in raw) throw new UsageError(`${key}: given more than once`);
    // `?mirror=&limit=` (a form, a template filled in part) leaves them unset: defaults apply.
    raw[key] = value === "" ? undefined : value;
  }
  return raw;
}

function parse<T>(schema: z.ZodType<T>, raw: Raw, missing: Record<string, string>, names: ParamNames): T {
  const defined = Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== undefined));
  const result = schema.safeParse(defined);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const key = issue.path.join(".");
    if (issue.code === "unrecognized_keys")
      return issue.keys.map((k) => `${k}: unknown parameter`).join("; ");
    const name = names[key] ?? key;
    if (!(key in defined)) return `${name}: ${missing[key] ?? "is required"}`;
    return `${name}: ${issue.message}`;
  });
  throw new UsageError(problems.join("; "));
}

function checkMirror<T extends { mirror?: string | undefined }>(
  params: T,
  mirrors: readonly string[],
  names: ParamNames,
): T {
  if (params.mirror !== undefined && !mirrors.includes(params.mirror))
    throw new UsageError(`${names.mirror ?? "mirror"}: ${unknownMirrorMessage(params.mirror, mirrors)}`);
  return params;
}
