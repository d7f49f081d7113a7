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
  it("treats 127.0.0.0/8, ::1 and localhost as loopback, and wildcard or LAN addresses as not", () => {
    for (const host of ["127.0.0.1", "127.1.2.3", "::1", "localhost"])
      expect(isLoopback(host), host).toBe(true);
    for (const host of ["0.0.0.0", "::", "10.0.0.5", "127.example.com"])
      expect(isLoopback(host), host).toBe(false);
  });
});
