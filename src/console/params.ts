/**
 * The console's parameters, shared by HTTP (`/v1/passes`, `/v1/problems`) and the CLI (`history`,
 * `problems`): one zod schema each, so both refuse the same input with the same words.
 */
import { z } from "zod";
import { integer, mirrorName, type ParamNames, pageLimit, parseParams } from "../consumers/params.js";

export const HISTORY_DEFAULT_LIMIT = 20;
export const HISTORY_MAX_LIMIT = 500;
export const PROBLEMS_DEFAULT_LIMIT = 1000;
export const PROBLEMS_MAX_LIMIT = 10_000;

const passId = integer(1, Number.MAX_SAFE_INTEGER);
const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * `before`: a pass id (the previous reply's `next_before`: passes with a lower id), or a time in
 * ISO 8601 (a pass's `started_at`: passes started before it; no zone is UTC), as `{ at }`.
 */
const passCursor = z.string().transform((text, ctx): number | { at: string } => {
  if (/^-?\d+$/.test(text)) {
    const id = passId.safeParse(text);
    if (id.success) return id.data;
    for (const issue of id.error.issues) ctx.addIssue({ code: "custom", message: issue.message });
    return z.NEVER;
  }
  // An offset's `+` written unencoded in a query string arrives as a space.
  const m = ISO_TIME.exec(text.replace(/ (\d{2}:?\d{2})$/, "+$1"));
  const [year, month, day] = [Number(m?.[1]), Number(m?.[2]), Number(m?.[3])];
  // Date.parse takes 2026-02-31 as March 3rd: the day is checked against its month first.
  const real =
    m !== null &&
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
  const ms = real ? Date.parse(m[4] === undefined && m[0].includes("T") ? `${m[0]}Z` : m[0]) : Number.NaN;
  if (Number.isNaN(ms)) {
    ctx.addIssue({
      code: "custom",
      message: "must be a pass id (a reply's next_before) or a time in ISO 8601 (a pass's started_at)",
    });
    return z.NEVER;
  }
  return { at: new Date(ms).toISOString() };
});

const HistoryParams = z.strictObject({
  mirror: mirrorName.optional(),
  limit: pageLimit(HISTORY_MAX_LIMIT, HISTORY_DEFAULT_LIMIT),
  before: passCursor.optional(),
});

const ProblemParams = z.strictObject({
  mirror: mirrorName.optional(),
  limit: pageLimit(PROBLEMS_MAX_LIMIT, PROBLEMS_DEFAULT_LIMIT),
});

const ApproveParams = z.strictObject({ mirror: mirrorName });

export type HistoryParams = z.infer<typeof HistoryParams>;
export type ProblemParams = z.infer<typeof ProblemParams>;
type Raw = Record<string, string | undefined>;

export function parseHistoryParams(raw: Raw, mirrors: readonly string[], names?: ParamNames): HistoryParams {
  return parseParams(HistoryParams, raw, mirrors, names);
}

export function parseProblemParams(raw: Raw, mirrors: readonly string[], names?: ParamNames): ProblemParams {
  return parseParams(ProblemParams, raw, mirrors, names);
}

/** `approve-sweep`'s mirror: required, and one the config names. */
export function parseApproveParams(
  raw: Raw,
  mirrors: readonly string[],
  names?: ParamNames,
): z.infer<typeof ApproveParams> {
  return parseParams(ApproveParams, raw, mirrors, names);
}
