/**
 * Scheduled times of a cron expression in a time zone, as node-cron's matcher reads it: the first
 * after an instant and the latest at or before one (docs/scaling-out.md#scheduling).
 */
import { getTasks } from "node-cron";
import { describe, expect, it } from "vitest";
import { cronOccurrences } from "../../src/cron-occurrences.js";

const at = (iso: string) => new Date(iso);
const iso = (d: Date | null) => d?.toISOString() ?? null;

describe("cronOccurrences", () => {
  it("finds the next and the previous time of a daily expression, an instant on the time counting as previous", () => {
    const daily = cronOccurrences("0 3 * * *", "UTC");
    expect(iso(daily.next(at("2026-03-10T02:59:59.999Z")))).toBe("2026-03-10T03:00:00.000Z");
    expect(iso(daily.next(at("2026-03-10T03:00:00.000Z")))).toBe("2026-03-11T03:00:00.000Z");
    expect(iso(daily.previous(at("2026-03-10T03:00:00.000Z")))).toBe("2026-03-10T03:00:00.000Z");
    expect(iso(daily.previous(at("2026-03-10T02:59:59.000Z")))).toBe("2026-03-09T03:00:00.000Z");
  });

  it("reads six-field expressions to the second", () => {
    const everyFive = cronOccurrences("*/5 * * * * *", "UTC");
    expect(iso(everyFive.previous(at("2026-03-10T10:00:07.400Z")))).toBe("2026-03-10T10:00:05.000Z");
    expect(iso(everyFive.next(at("2026-03-10T10:00:07.400Z")))).toBe("2026-03-10T10:00:10.000Z");
    expect(iso(everyFive.next(at("2026-03-10T23:59:59.000Z")))).toBe("2026-03-11T00:00:00.000Z");
  });

  it("works in the mirror's time zone, running a local time the clocks skip when they jump", () => {
    // 02:30 does not exist in Paris on 29 March 2026 (clocks go from 02:00 to 03:00, 01:00 UTC).
    const paris = cronOccurrences("30 2 * * *", "Europe/Paris");
    expect(iso(paris.next(at("2026-03-28T12:00:00Z")))).toBe("2026-03-29T01:00:00.000Z");
    expect(iso(paris.next(at("2026-03-29T01:00:00Z")))).toBe("2026-03-30T00:30:00.000Z");
    expect(iso(paris.previous(at("2026-03-30T00:00:00Z")))).toBe("2026-03-29T01:00:00.000Z");
    const weekly = cronOccurrences("0 2 * * 0", "Europe/Paris");
    expect(iso(weekly.previous(at("2026-03-28T12:00:00Z")))).toBe("2026-03-22T01:00:00.000Z");
    expect(iso(weekly.previous(at("2026-03-29T12:00:00Z")))).toBe("2026-03-29T01:00:00.000Z");
    // Every half hour: the skipped 02:00 and 02:30 are the 03:00 that follows, once.
    const halfHourly = cronOccurrences("*/30 * * * *", "Europe/Paris");
    expect(iso(halfHourly.next(at("2026-03-29T00:30:00Z")))).toBe("2026-03-29T01:00:00.000Z");
    expect(iso(halfHourly.next(at("2026-03-29T01:00:00Z")))).toBe("2026-03-29T01:30:00.000Z");
  });

  it("runs a local time the clocks show twice at the first, from either side of the second", () => {
    // New York goes back from 02:00 EDT to 01:00 EST on 1 November 2026: 01:30 is 05:30 and 06:30 UTC.
    const ny = cronOccurrences("30 1 * * *", "America/New_York");
    expect(iso(ny.next(at("2026-11-01T05:00:00Z")))).toBe("2026-11-01T05:30:00.000Z");
    expect(iso(ny.next(at("2026-11-01T05:30:00Z")))).toBe("2026-11-02T06:30:00.000Z");
    expect(iso(ny.previous(at("2026-11-01T06:00:00Z")))).toBe("2026-11-01T05:30:00.000Z");
    expect(iso(ny.previous(at("2026-11-01T06:45:00Z")))).toBe("2026-11-01T05:30:00.000Z");
    // Berlin goes back from 03:00 CEST to 02:00 CET on 25 October 2026: 02:30 is 00:30 and 01:30 UTC.
    const berlin = cronOccurrences("30 2 * * *", "Europe/Berlin");
    expect(iso(berlin.next(at("2026-10-24T12:00:00Z")))).toBe("2026-10-25T00:30:00.000Z");
    expect(iso(berlin.next(at("2026-10-25T00:45:00Z")))).toBe("2026-10-26T01:30:00.000Z");
    expect(iso(berlin.previous(at("2026-10-25T00:45:00Z")))).toBe("2026-10-25T00:30:00.000Z");
    expect(iso(berlin.previous(at("2026-10-25T01:15:00Z")))).toBe("2026-10-25T00:30:00.000Z");
  });

  it("matches a day of month and a day of week together, as node-cron does", () => {
    const firstMonday = cronOccurrences("0 3 1 * 1", "UTC");
    expect(iso(firstMonday.next(at("2026-01-01T00:00:00Z")))).toBe("2026-06-01T03:00:00.000Z");
  });

  it("leaves nothing in node-cron's process-wide registry", () => {
    const before = getTasks().size;
    cronOccurrences("*/15 * * * *", "UTC").next(new Date("2026-03-10T10:00:00Z"));
    expect(getTasks().size).toBe(before);
  });

  it("looks back and ahead at most a year", () => {
    const yearly = cronOccurrences("0 0 3 1 1 *", "UTC");
    expect(iso(yearly.previous(at("2026-12-31T00:00:00Z")))).toBe("2026-01-01T03:00:00.000Z");
    // 29 February on a Monday: 2044 is the next.
    const rare = cronOccurrences("0 0 29 2 1", "UTC");
    expect(rare.next(at("2026-01-01T00:00:00Z"))).toBeNull();
    expect(rare.previous(at("2026-01-01T00:00:00Z"))).toBeNull();
  });
});
