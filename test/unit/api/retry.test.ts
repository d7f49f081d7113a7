import { describe, expect, it } from "vitest";
import {
  backoffDelayMs,
  classifyTransportError,
  DEFAULT_BACKOFF,
  isRefusedBeforeWork,
  isRetryableStatus,
  MAX_RETRY_AFTER_MS,
  parseRetryAfterMs,
  retryDelayMs,
  transportErrorCode,
} from "../../../src/api/retry.js";

const NOW = Date.parse("2026-11-21T06:00:00Z");

describe("backoffDelayMs", () => {
  it("doubles the ceiling per attempt and scales it by the random draw (full jitter)", () => {
    const half = () => 0.5;
    expect([1, 2, 3, 4].map((n) => backoffDelayMs(n, DEFAULT_BACKOFF, half))).toEqual([250, 500, 1000, 2000]);
  });

  it("caps the ceiling at maxMs", () => {
    expect(backoffDelayMs(7, DEFAULT_BACKOFF, () => 0.999999)).toBe(29_999);
    expect(backoffDelayMs(60, DEFAULT_BACKOFF, () => 0.5)).toBe(15_000);
    expect(backoffDelayMs(5000, DEFAULT_BACKOFF, () => 0.5)).toBe(15_000);
  });

  it("can be zero, never negative or beyond the ceiling even with a bad random source", () => {
    expect(backoffDelayMs(3, DEFAULT_BACKOFF, () => 0)).toBe(0);
    expect(backoffDelayMs(1, DEFAULT_BACKOFF, () => -3)).toBe(0);
    expect(backoffDelayMs(1, { baseMs: 100, maxMs: 1000 }, () => 7)).toBe(100);
  });
});

describe("parseRetryAfterMs", () => {
  it("reads delta-seconds", () => {
    expect(parseRetryAfterMs("7", NOW)).toBe(7000);
    expect(parseRetryAfterMs(" 0 ", NOW)).toBe(0);
    expect(parseRetryAfterMs("1.5", NOW)).toBe(1500);
    expect(parseRetryAfterMs(["3", "9"], NOW)).toBe(3000);
  });

  it("reads an HTTP date relative to now, never negative", () => {
    expect(parseRetryAfterMs("Sat, 21 Nov 2026 06:00:30 GMT", NOW)).toBe(30_000);
    expect(parseRetryAfterMs("Sat, 21 Nov 2026 05:00:00 GMT", NOW)).toBe(0);
  });

  it("caps a long wait at five minutes", () => {
    expect(parseRetryAfterMs("86400", NOW)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfterMs("Sun, 22 Nov 2026 06:00:00 GMT", NOW)).toBe(MAX_RETRY_AFTER_MS);
  });

  it("ignores an absent or unreadable header", () => {
    expect(parseRetryAfterMs(undefined, NOW)).toBeUndefined();
    expect(parseRetryAfterMs("", NOW)).toBeUndefined();
    expect(parseRetryAfterMs("soon", NOW)).toBeUndefined();
    expect(parseRetryAfterMs("-5", NOW)).toBeUndefined();
  });
});

describe("retryDelayMs", () => {
  const base = { attempt: 2, nowMs: NOW, backoff: DEFAULT_BACKOFF, random: () => 0.5 };
  it("prefers Retry-After and falls back to backoff", () => {
    expect(retryDelayMs({ ...base, retryAfter: "4" })).toBe(4000);
    expect(retryDelayMs({ ...base, retryAfter: undefined })).toBe(500);
    expect(retryDelayMs({ ...base, retryAfter: "garbage" })).toBe(500);
  });
});

describe("retry table", () => {
  it("retries 429 and every 5xx, no other status", () => {
    expect([429, 500, 502, 503, 504, 599].every(isRetryableStatus)).toBe(true);
    expect([200, 301, 400, 401, 403, 404, 409, 422].some(isRetryableStatus)).toBe(false);
  });

  it("lets a non-idempotent POST repeat only after 429 or 503", () => {
    expect([429, 503].every(isRefusedBeforeWork)).toBe(true);
    expect([500, 502, 504].some(isRefusedBeforeWork)).toBe(false);
  });

  it("tells never-sent connection failures from ones after sending", () => {
    const err = (code: string) => Object.assign(new Error(code), { code });
    expect(classifyTransportError(err("ECONNREFUSED"), false)).toBe("not-sent");
    expect(classifyTransportError(err("ENOTFOUND"), false)).toBe("not-sent");
    expect(classifyTransportError(err("UND_ERR_CONNECT_TIMEOUT"), false)).toBe("not-sent");
    expect(classifyTransportError(err("ECONNRESET"), false)).toBe("maybe-sent");
    expect(classifyTransportError(err("UND_ERR_SOCKET"), false)).toBe("maybe-sent");
    expect(classifyTransportError(err("UND_ERR_HEADERS_TIMEOUT"), false)).toBe("maybe-sent");
    expect(classifyTransportError(new Error("anything"), false)).toBe("maybe-sent");
    expect(classifyTransportError(err("ECONNREFUSED"), true)).toBe("maybe-sent");
    expect(classifyTransportError(err("UND_ERR_INVALID_ARG"), false)).toBe("fatal");
  });

  it("finds the code through wrappers", () => {
    const inner = Object.assign(new Error("refused"), { code: "ECONNREFUSED" });
    expect(transportErrorCode(new Error("fetch failed", { cause: inner }))).toBe("ECONNREFUSED");
    expect(transportErrorCode(new AggregateError([inner]))).toBe("ECONNREFUSED");
    expect(transportErrorCode("nope")).toBeUndefined();
  });
});
