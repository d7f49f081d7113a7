/**
 * The one path every API call takes: undici request with the bearer token and a per-attempt
 * timeout, the retry loop (retry.ts decides what is retryable), status mapping (status-errors.ts)
 * and zod validation of the body. Per-attempt metrics and logs come from here.
 *
 * Why not undici's `interceptors.retry`: it retries inside one dispatch, so it cannot report each
 * attempt (metrics, logs), sleeps on its own timers (no injected sleep, no abort while waiting), and
 * drops the last response's body (the `detail` our errors keep); it also cannot tell "POST refused
 * with 429" (safe to repeat) from "POST reset after sending" (not safe) without rebuilding this.
 */
import { Agent, type Dispatcher } from "undici";
import type { z } from "zod";
import {
  AbortedError,
  type ApiError,
  type ApiErrorFields,
  BadResponseError,
  UnavailableError,
} from "../errors.js";
import type { Logger } from "../log.js";
import {
  type BackoffOptions,
  backoffDelayMs,
  classifyTransportError,
  sleep as defaultSleep,
  isRetryableStatus,
  retryDelayMs,
  transportErrorCode,
} from "./retry.js";
import { fillRoute, queryString, type Route } from "./routes.js";
import { ErrorBody } from "./schemas.js";
import { describeDetail, errorForStatus } from "./status-errors.js";

/**
 * Who tries a call again once all its attempts failed, which API_UNAVAILABLE's message ends with: a
 * pass (the daemon's, `sync`'s, the one `trigger` runs) leaves it to the next pass; a one-shot
 * command (`plan`, `apply`, `check`, `init`) has no next pass, so the operator runs it again.
 */
export type RetriedBy = "next pass" | "operator";

const TRY_AGAIN: Readonly<Record<RetriedBy, string>> = {
  "next pass": "the next pass tries again",
  operator: "run the command again once the service answers",
};

export interface TransportOptions {
  baseUrl: string;
  token: string;
  tokenEnv: string;
  timeoutMs: number;
  maxAttempts: number;
  retriedBy: RetriedBy;
  log: Logger;
  onRequest?: (r: { method: string; route: string; code: string; durationSeconds: number }) => void;
  backoff: BackoffOptions;
  random: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  dispatcher?: Dispatcher;
}

/** A POST that must not be repeated once it may have reached the service. */
export interface UnsafeCall {
  /** Statuses that prove the service did nothing, so another attempt is safe. */
  retryStatus: (status: number) => boolean;
  /**
   * Awaited before each attempt; throwing sends nothing more. A pass checks that it still holds its
   * lease: a replica paused in a retry's wait must not post again once another replica took over.
   */
  beforeAttempt?: () => Promise<void>;
  /**
   * The error for "may have happened": `reason` is a status or an error code; `abandoned` when the
   * attempt timed out, so the service may still be handling it.
   */
  outcomeUnknown: (reason: string, fields: ApiErrorFields, cause?: unknown, abandoned?: boolean) => ApiError;
}

export interface Call<T> {
  method: "GET" | "POST" | "PUT" | "DELETE";
  route: Route;
  params?: Readonly<Record<string, string>>;
  query?: Readonly<Record<string, string | number | undefined>>;
  body?: unknown;
  /** Response schema; without one the body is read and ignored. */
  schema?: z.ZodType<T>;
  /** Reads the body's JSON text before the schema; default JSON.parse. */
  parse?: (text: string) => unknown;
  unsafe?: UnsafeCall;
  signal?: AbortSignal | undefined;
  /** Told of each 429 before its retry waits, so a caller can send less. */
  onThrottled?: () => void;
}

export interface Transport {
  request<T>(call: Call<T>): Promise<T>;
  close(): Promise<void>;
}

type Answer =
  | {
      kind: "response";
      status: number;
      retryAfter: string | string[] | undefined;
      location: string | string[] | undefined;
      text: string;
    }
  | { kind: "transport"; error: unknown; timedOut: boolean };

/** Why an attempt failed, when another attempt may help. */
interface Failure {
  label: string;
  status?: number;
  detail?: unknown;
  cause?: unknown;
}

/** The text with the token, wherever it appears, replaced by `[redacted]`. */
function redactToken(text: string, token: string): string {
  return token ? text.split(token).join("[redacted]") : text;
}

/**
 * A freshly parsed error body with the token redacted in every string and key, in place. The raw
 * text's scrub misses an echo that the service's serializer escaped (`\/`, `\uXXXX`), which
 * JSON.parse turns back into the token. A loop, not recursion: a body nested deeper than the
 * stack must still come out as an error, not a RangeError.
 */
function redactParsed(json: unknown, token: string): unknown {
  if (typeof json === "string") return redactToken(json, token);
  const todo: unknown[] = [json];
  while (token && todo.length > 0) {
    const node = todo.pop();
    if (node === null || typeof node !== "object") continue;
    const record = node as Record<string, unknown>;
    for (const [key, value] of Object.entries(record)) {
      const clean = typeof value === "string" ? redactToken(value, token) : value;
      const cleanKey = redactToken(key, token);
      if (cleanKey !== key) delete record[key];
      record[cleanKey] = clean;
      todo.push(clean);
    }
  }
  return json;
}

/** How much of a text the service wrote (an unreadable error body, a source's error) is kept. */
const DETAIL_TEXT_CHARS = 2000;

/**
 * The service's own text as errors, logs and the database may hold it: the token, wherever the
 * service (or a proxy reflecting headers) echoed it, replaced by `[redacted]`, and at most
 * DETAIL_TEXT_CHARS kept.
 */
export function serviceText(text: string, token: string): string {
  const clean = redactToken(text, token);
  return clean.length > DETAIL_TEXT_CHARS ? `${clean.slice(0, DETAIL_TEXT_CHARS)}...` : clean;
}

export function createTransport(options: TransportOptions): Transport {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const ownAgent = options.dispatcher ? undefined : new Agent({ keepAliveTimeout: 10_000 });
  const dispatcher: Dispatcher = options.dispatcher ?? (ownAgent as Agent);
  const sleep = options.sleep ?? defaultSleep;
  const { log, timeoutMs, maxAttempts, token } = options;
  let closed = false;

  /** Error bodies are echoed into errors and logs: a proxy that reflects headers must not leak the token. */
  const scrub = (text: string): string => redactToken(text, token);

  /** One HTTP exchange, bounded by timeoutMs and the caller's signal; never throws. */
  async function exchange(call: Call<unknown>, url: string): Promise<Answer> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error(`no complete response within ${timeoutMs} ms`));
    }, timeoutMs);
    // Linked by hand rather than AbortSignal.any: the caller's signal is often the daemon's
    // long-lived shutdown signal, and the listener is removed as soon as the attempt ends.
    const onCallerAbort = () => controller.abort(call.signal?.reason);
    call.signal?.addEventListener("abort", onCallerAbort, { once: true });
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: "application/json" };
    if (call.body !== undefined) headers["content-type"] = "application/json";
    try {
      const { origin, pathname, search } = new URL(url);
      const response = await dispatcher.request({
        origin,
        path: `${pathname}${search}`,
        method: call.method,
        headers,
        body: call.body === undefined ? null : JSON.stringify(call.body),
        signal: controller.signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      const text = await response.body.text();
      const { "retry-after": retryAfter, location } = response.headers;
      return { kind: "response", status: response.statusCode, retryAfter, location, text };
    } catch (error) {
      return { kind: "transport", error, timedOut };
    } finally {
      clearTimeout(timer);
      call.signal?.removeEventListener("abort", onCallerAbort);
    }
  }

  /** One attempt: the exchange, its metrics and debug line; a caller's abort ends the call here. */
  async function send(call: Call<unknown>, url: string, attempt: number): Promise<Answer> {
    const started = performance.now();
    const answer = await exchange(call, url);
    const durationSeconds = (performance.now() - started) / 1000;
    const code = answer.kind === "response" ? String(answer.status) : "error";
    options.onRequest?.({ method: call.method, route: call.route, code, durationSeconds });
    const errorCode =
      answer.kind === "response" ? undefined : answer.timedOut ? "timeout" : transportErrorCode(answer.error);
    log.debug(
      {
        method: call.method,
        route: call.route,
        status: code,
        errorCode,
        attempt,
        ms: Math.round(durationSeconds * 1000),
      },
      "api request",
    );
    if (answer.kind === "transport" && call.signal?.aborted) {
      // An aborted POST may still have reached the service: say so in the cause.
      const cause = call.unsafe
        ? call.unsafe.outcomeUnknown("aborted", { method: call.method, route: call.route }, answer.error)
        : answer.error;
      throw aborted(call, cause);
    }
    return answer;
  }

  /** Throws the final error for an answer, or returns why another attempt may help. */
  function judge(call: Call<unknown>, answer: Answer, url: string): Failure {
    const fields: ApiErrorFields = { method: call.method, route: call.route };
    if (answer.kind === "transport") {
      const kind = classifyTransportError(answer.error, answer.timedOut);
      const label = answer.timedOut
        ? `timeout after ${timeoutMs} ms`
        : (transportErrorCode(answer.error) ?? "network error");
      if (kind === "fatal") throw answer.error;
      if (kind === "maybe-sent" && call.unsafe)
        throw call.unsafe.outcomeUnknown(label, fields, answer.error, answer.timedOut);
      return { label, cause: answer.error };
    }
    const { status } = answer;
    const detail = errorDetail(answer.text);
    if (!isRetryableStatus(status)) {
      const redirectedTo = redirectTarget(answer.location, url);
      throw errorForStatus({ ...fields, status, detail, tokenEnv: options.tokenEnv, redirectedTo });
    }
    if (call.unsafe && !call.unsafe.retryStatus(status)) {
      throw call.unsafe.outcomeUnknown(String(status), { ...fields, status, detail });
    }
    return { label: String(status), status, detail };
  }

  /**
   * Where a redirect points, for its error: the origin and path only (a query may carry a signed
   * session), scrubbed. Undefined without a readable Location.
   */
  function redirectTarget(location: string | string[] | undefined, requestUrl: string): string | undefined {
    const raw = Array.isArray(location) ? location[0] : location;
    if (!raw) return undefined;
    try {
      const target = new URL(raw, requestUrl);
      return scrub(`${target.origin}${target.pathname}`);
    } catch {
      return undefined;
    }
  }

  function errorDetail(text: string): unknown {
    const clean = scrub(text).trim();
    if (!clean) return undefined;
    try {
      const json = redactParsed(JSON.parse(clean), token);
      const body = ErrorBody.safeParse(json);
      return body.success && body.data.detail !== undefined ? body.data.detail : json;
    } catch {
      return serviceText(clean, token);
    }
  }

  function parseBody<T>(call: Call<T>, status: number, text: string): T {
    if (!call.schema) return undefined as T;
    const where = `${call.method} ${call.route}`;
    let json: unknown;
    try {
      json = (call.parse ?? JSON.parse)(text);
    } catch (cause) {
      const snippet = scrub(text).slice(0, 200);
      throw new BadResponseError(
        `${where}: the response is not JSON: check that api.base_url points at the service's /api/v1`,
        { method: call.method, route: call.route, status, detail: snippet },
        { cause },
      );
    }
    const parsed = call.schema.safeParse(json);
    if (parsed.success) return parsed.data;
    const issues = parsed.error.issues
      .slice(0, 5)
      .map((i) => ({ path: i.path.join(".") || "(root)", message: i.message }));
    const first = issues[0] ?? { path: "(root)", message: "invalid" };
    throw new BadResponseError(
      `${where}: the response does not have the documented shape at ${first.path} (${first.message}): the service's API may have changed; upgrade syncmirror or report it`,
      { method: call.method, route: call.route, status, detail: { issues } },
      { cause: parsed.error },
    );
  }

  function aborted(call: Call<unknown>, cause: unknown): AbortedError {
    return new AbortedError(`${call.method} ${call.route} was aborted`, { cause });
  }

  async function wait(ms: number, call: Call<unknown>): Promise<void> {
    try {
      await sleep(ms, call.signal);
    } catch (error) {
      if (call.signal?.aborted) throw aborted(call, error);
      throw error;
    }
    if (call.signal?.aborted) throw aborted(call, call.signal.reason);
  }

  async function request<T>(call: Call<T>): Promise<T> {
    const url = `${baseUrl}${fillRoute(call.route, call.params)}${queryString(call.query)}`;
    for (let attempt = 1; ; attempt++) {
      if (call.signal?.aborted) throw aborted(call, call.signal.reason);
      await call.unsafe?.beforeAttempt?.();
      const answer = await send(call, url, attempt);
      if (answer.kind === "response" && answer.status >= 200 && answer.status < 300) {
        try {
          return parseBody(call, answer.status, answer.text);
        } catch (error) {
          // A non-idempotent POST that was answered 2xx happened: an unreadable body loses its result.
          if (!call.unsafe) throw error;
          throw call.unsafe.outcomeUnknown(
            `unreadable ${answer.status} response`,
            { method: call.method, route: call.route, status: answer.status },
            error,
          );
        }
      }
      const failure = judge(call, answer, url);
      if (failure.status === 429) call.onThrottled?.();
      if (attempt >= maxAttempts) throw unavailable(call, attempt, failure);
      const delayMs =
        answer.kind === "response"
          ? retryDelayMs({
              attempt,
              retryAfter: answer.retryAfter,
              nowMs: Date.now(),
              backoff: options.backoff,
              random: options.random,
            })
          : backoffDelayMs(attempt, options.backoff, options.random);
      log.warn(
        {
          method: call.method,
          route: call.route,
          status: failure.label,
          attempt,
          maxAttempts,
          delayMs,
        },
        "api request failed; retrying",
      );
      await wait(delayMs, call);
    }
  }

  function unavailable(call: Call<unknown>, attempts: number, failure: Failure): UnavailableError {
    const described = describeDetail(failure.detail);
    // No connection at all is not weather: more attempts will not help, a wrong address will not heal.
    const again = TRY_AGAIN[options.retriedBy];
    const advice =
      failure.status === undefined && classifyTransportError(failure.cause, false) === "not-sent"
        ? `nothing answers at ${new URL(baseUrl).origin}: check api.base_url (${baseUrl}) and that the service is reachable from this host; ${again}`
        : `the service is unavailable or rate-limiting; ${again}. Check the service's status, or raise api.max_attempts / api.timeout_seconds`;
    return new UnavailableError(
      `${call.method} ${call.route} still failed after ${attempts} attempt${attempts === 1 ? "" : "s"} (last: ${failure.label}${described ? `: ${described}` : ""}): ${advice}`,
      { method: call.method, route: call.route, status: failure.status, detail: failure.detail },
      { cause: failure.cause },
    );
  }

  return {
    request,
    async close() {
      if (closed) return;
      closed = true;
      await ownAgent?.close();
    },
  };
}
