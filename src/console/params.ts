/**
 * The console's parameters, shared by HTTP (`/v1/passes`, `/v1/problems`) and the CLI (`history`,
 * `problems`): one zod schema each, so both refuse the same input with the same words.
 */
import { z } from "zod";
import { integer, mirrorName, type ParamNames, parseParams } from "../consumers/params.js";

export const HISTORY_DEFAULT_LIMIT = 20;
export const HISTORY_MAX_LIMIT = 500;
export const PROBLEMS_DEFAULT_LIMIT = 1000;
export const PROBLEMS_MAX_LIMIT = 10_000;

const HistoryParams = z.strictObject({
  mirror: mirrorName.optional(),
  limit: integer(1, HISTORY_MAX_LIMIT).default(HISTORY_DEFAULT_LIMIT),
  /** The cursor: passes with a lower id (the previous reply's `next_before`). */
  before: integer(1, Number.MAX_SAFE_INTEGER).optional(),
});

const ProblemParams = z.strictObject({
  mirror: mirrorName.optional(),
  limit: integer(1, PROBLEMS_MAX_LIMIT).default(PROBLEMS_DEFAULT_LIMIT),
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
