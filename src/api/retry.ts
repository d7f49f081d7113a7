/**
 * The retry table and backoff arithmetic of the API client: which answers are worth another
 * attempt, how long to wait before it. Pure functions, except `sleep`.
 */
import { setTimeout as delay } from "node:timers/promises";

export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_BACKOFF: Readonly<BackoffOptions> = Object.freeze({ baseMs: 500, maxMs: 30_000 });

/** A `Retry-After` longer than this is cut down: a pass should not hang on one header. */
export const MAX_RETRY_AFTER_MS = 5 * 60_000;

/**
 * Exponential backoff with full jitter: a uniform delay in [0, min(maxMs, baseMs * 2^(attempt-1))).
 * `attempt` is the 1-based number of the attempt that just failed; `random` returns [0, 1).
 */
export function backoffDelayMs(attempt: number, backoff: BackoffOptions, random: () => number): number {
  const exponent = Math.max(0, attempt - 1);
  const ceiling = Math.min(backoff.maxMs, backoff.baseMs * 2 ** exponent);
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.floor(r * ceiling);
}

/**
 * `Retry-After` as milliseconds from `nowMs`: delta-seconds or an HTTP date, capped at
 * MAX_RETRY_AFTER_MS. `undefined` when absent or unreadable (the caller falls back to backoff).
 */
export function parseRetryAfterMs(value: string | string[] | undefined, nowMs: number): number | undefined {
  const raw = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!raw) return undefined;
  let ms: number;
  if (/^\d+(\.\d+)?$/.test(raw)) {
    ms = Number(raw) * 1000;
  } else {
    // An HTTP date names its month; without this check V8 reads "-5" as a year.
    const at = /[a-z]/i.test(raw) ? Date.parse(raw) : Number.NaN;
    if (Number.isNaN(at)) return undefined;
    ms = at - nowMs;
  }
  return Math.round(Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS));
}

/** The delay before the next attempt: the server's `Retry-After` when it gave one, else backoff. */
export function retryDelayMs(input: {
  attempt: number;
  retryAfter: string | string[] | undefined;
  nowMs: number;
  backoff: BackoffOptions;
  random: () => number;
}): number {
  return (
    parseRetryAfterMs(input.retryAfter, input.nowMs) ??
    backoffDelayMs(input.attempt, input.backoff, input.random)
  );
}

/** 429 (rate limited) and every 5xx: the service may answer differently later. Other 4xx never. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || (status >= 500 && status <= 599);
}

/**
 * For a non-idempotent POST: statuses that prove the service did nothing. 429 and 503 are refusals
 * before any work; a 500/502/504 may come from a gateway after the service already acted.
 */
export function isRefusedBeforeWork(status: number): boolean {
  return status === 429 || status === 503;
}

/** Errors raised before a connection existed: the request was certainly not sent. */
const NOT_SENT_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ENETDOWN",
  "ENETUNREACH",
  "EHOSTDOWN",
  "EHOSTUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/** Errors that are bugs or test misconfiguration, not weather: never retried. */
const NEVER_RETRY_CODES: ReadonlySet<string> = new Set([
  "UND_ERR_INVALID_ARG",
  "UND_ERR_NOT_SUPPORTED",
  "ERR_INVALID_URL",
  "UND_MOCK_ERR_MOCK_NOT_MATCHED",
  "UND_ERR_CLOSED",
  "UND_ERR_DESTROYED",
]);

/** The `code` of a transport error, looking through undici / Node wrappers (`cause`, AggregateError). */
export function transportErrorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== null && typeof current === "object"; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string") return code;
    const nested = (current as { errors?: unknown[] }).errors?.[0];
    current = nested ?? (current as { cause?: unknown }).cause;
  }
  return undefined;
}

export type TransportErrorKind = "not-sent" | "maybe-sent" | "fatal";

/**
 * How a transport error (no HTTP answer) bears on a retry: `not-sent` (connection never made: safe
 * to retry anything), `maybe-sent` (reset, timeout, socket error: safe only for idempotent
 * requests), `fatal` (a bug: never retried).
 */
export function classifyTransportError(error: unknown, timedOut: boolean): TransportErrorKind {
  if (timedOut) return "maybe-sent";
  const code = transportErrorCode(error);
  if (code && NEVER_RETRY_CODES.has(code)) return "fatal";
  if (code && NOT_SENT_CODES.has(code)) return "not-sent";
  return "maybe-sent";
}

/** Default sleep: a real timer, rejected as soon as `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return delay(ms, undefined, signal ? { signal } : undefined);
}
