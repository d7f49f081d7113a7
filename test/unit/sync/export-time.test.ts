import { describe, expect, it } from "vitest";
import { exportTime } from "../../../src/sync/time.js";

/** What exportTime gave before its fast path: parse, then toISOString, years 0001-9999 only. */
function parsed(value: string): string | null {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) return null;
  const iso = new Date(ms).toISOString();
  return /^(?!0000)\d{4}-/.test(iso) ? iso : null;
}

describe("exportTime", () => {
  it("stores the service's resource times in toISOString form", () => {
    expect(exportTime("2026-11-20T14:31:00Z")).toBe("2026-11-20T14:31:00.000Z");
    expect(exportTime("2026-11-20T14:31:00.250Z")).toBe("2026-11-20T14:31:00.250Z");
    expect(exportTime("2026-11-20T15:31:00+01:00")).toBe("2026-11-20T14:31:00.000Z");
    expect(exportTime(null)).toBeNull();
    expect(exportTime(undefined)).toBeNull();
  });

  it("refuses what is not a time, or lies outside years 0001-9999", () => {
    for (const value of [
      "2024-13-01T00:00:00Z",
      "2024-00-10T00:00:00Z",
      "2024-01-00T00:00:00Z",
      "2024-01-01T23:59:60Z",
      "0000-01-01T00:00:00Z",
      "+275760-09-13T00:00:00.000Z",
      "yesterday",
    ])
      expect(exportTime(value), value).toBeNull();
  });

  it("reads every form exactly as parsing it would", () => {
    const edges = [
      "2024-02-29T00:00:00Z",
      "2000-02-29T12:00:00Z",
      "1900-02-29T00:00:00Z",
      "2100-02-28T23:59:59.999Z",
      "0001-01-01T00:00:00Z",
      "9999-12-31T23:59:59.999Z",
      "2024-01-01T24:00:00Z",
      "2024-01-01T00:00:00.5Z",
      "2023-02-29T00:00:00Z",
      "2024-04-31T00:00:00Z",
      "2024-01-01T00:00:00.123456Z",
      "2024-01-01T00:00Z",
      "2024-01-01",
    ];
    const spread = Array.from({ length: 2000 }, (_, i) =>
      new Date(-6e13 + i * 1.3e11 + i * 997).toISOString(),
    );
    for (const value of [...edges, ...spread, ...spread.map((v) => `${v.slice(0, 19)}Z`)])
      expect(exportTime(value), value).toBe(parsed(value));
  });
});
