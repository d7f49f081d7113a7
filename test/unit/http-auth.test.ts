import { describe, expect, it } from "vitest";
import { isBearerAuthorized } from "../../src/http-auth.js";
import { isLoopback } from "../../src/http-server.js";

describe("isBearerAuthorized", () => {
  it("accepts exactly 'Bearer <token>' (scheme case-insensitive)", () => {
    expect(isBearerAuthorized("Bearer abc123", "abc123")).toBe(true);
    expect(isBearerAuthorized("bearer abc123", "abc123")).toBe(true);
    expect(isBearerAuthorized("Bearer abc1234", "abc123")).toBe(false);
    expect(isBearerAuthorized("Bearer abc12", "abc123")).toBe(false);
    expect(isBearerAuthorized("abc123", "abc123")).toBe(false);
    expect(isBearerAuthorized(undefined, "abc123")).toBe(false);
  });

  it("refuses everyone when no token is configured", () => {
    expect(isBearerAuthorized("Bearer ", "")).toBe(false);
    expect(isBearerAuthorized("Bearer x", undefined)).toBe(false);
    expect(isBearerAuthorized(undefined, undefined)).toBe(false);
  });
});

describe("isLoopback", () => {
  it("treats bound addresses in 127.0.0.0/8, ::1 and IPv4-mapped 127.0.0.0/8 as loopback, wildcard or LAN ones as not", () => {
    for (const address of ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1", "::FFFF:127.9.9.9"])
      expect(isLoopback(address), address).toBe(true);
    for (const address of ["0.0.0.0", "::", "10.0.0.5", "::ffff:10.0.0.5", "::2", "fe80::1"])
      expect(isLoopback(address), address).toBe(false);
  });
});
