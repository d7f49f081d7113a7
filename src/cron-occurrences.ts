/**
 * Scheduled times of a cron expression in a time zone: the first after an instant and the latest
 * at or before one (docs/scaling-out.md#scheduling: a due pass, and the catch-up at start-up).
 *
 * node-cron decides what an expression means: it validated the config (`config-cron.ts`) and its
 * `match` is the truth here, so a day-of-month with a day-of-week, a step or a name reads the same
 * as it always did. It computes next runs only from the wall clock and never previous ones, so this
 * walks the days of the zone, tries each day's candidate times (the expression's own seconds,
 * minutes and hours, in order) and stops at the first that node-cron matches. A candidate carries a
 * matching second, minute and hour by construction, so when it does not match, its day, month or
 * weekday is wrong and the rest of that day is skipped: a weekly expression costs about seven checks.
 *
 * Daylight saving time: every local time an expression names runs once a day. One the clocks skip
 * (02:30 when they go from 02:00 to 03:00) runs at the instant they skip to (03:00); one they show
 * twice (02:30 when they go back from 03:00 to 02:00) runs at the first. A day's candidates thus
 * fall in the order of their local times, never earlier than one before them.
 */
import { createTask, parse } from "node-cron";

/** How far either way an occurrence is looked for: an expression firing less than yearly finds none. */
export const SEARCH_DAYS = 366;

export interface CronOccurrences {
  /** The first scheduled time strictly after `after`, or null within SEARCH_DAYS. */
  next(after: Date): Date | null;
  /** The latest scheduled time at or before `atOrBefore`, or null within SEARCH_DAYS. */
  previous(atOrBefore: Date): Date | null;
}

interface LocalTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

export function cronOccurrences(expression: string, timeZone: string): CronOccurrences {
  // Only its matcher is used: never started, and destroyed at once, which takes it out of
  // node-cron's process-wide registry (a `status` builds these on every call); `match` still works.
  // It reads a candidate's local date and time, written as UTC: an instant would not show a local
  // time the clocks skip.
  const task = createTask(expression, () => undefined, { timezone: "UTC" });
  void task.destroy();
  const fields = parse(expression);
  const ascending = {
    hours: [...fields.hour].sort((a, b) => a - b),
    minutes: [...fields.minute].sort((a, b) => a - b),
    seconds: [...fields.second].sort((a, b) => a - b),
  };
  const descending = {
    hours: [...ascending.hours].reverse(),
    minutes: [...ascending.minutes].reverse(),
    seconds: [...ascending.seconds].reverse(),
  };
  const zone = createZone(timeZone);

  function walk(bound: Date, forward: boolean): Date | null {
    const boundMs = bound.getTime();
    const start = zone.local(boundMs);
    const startSecond = secondOfDay(start);
    // When the clocks went back in the last day, local times up to that shift later than the
    // bound's own may have shown (their first showing, the one that counts) before the bound.
    const fold = forward ? 0 : Math.max(0, zone.offsetAt(boundMs - DAY_MS) - zone.offsetAt(boundMs)) / 1000;
    const order = forward ? ascending : descending;
    for (let i = 0; i < SEARCH_DAYS; i++) {
      const day = addDays(start, forward ? i : -i);
      const found = firstOnDay(
        day,
        order,
        // On the bound's own day only the times on the right side of it count.
        (second) => i > 0 || (forward ? second >= startSecond : second <= startSecond + fold),
        (ms) => (forward ? ms > boundMs : ms <= boundMs),
      );
      if (found !== null) return new Date(found);
    }
    return null;
  }

  /** The day's first candidate in walking order that node-cron matches, or null. */
  function firstOnDay(
    day: Pick<LocalTime, "year" | "month" | "day">,
    order: typeof ascending,
    inDay: (secondOfDay: number) => boolean,
    beyond: (ms: number) => boolean,
  ): number | null {
    for (const hour of order.hours)
      for (const minute of order.minutes)
        for (const second of order.seconds) {
          if (!inDay(hour * 3600 + minute * 60 + second)) continue;
          const time = { ...day, hour, minute, second };
          const ms = zone.instant(time);
          if (!beyond(ms)) continue;
          return task.match(new Date(asUtc(time))) ? ms : null;
        }
    return null;
  }

  return {
    next: (after) => walk(after, true),
    previous: (atOrBefore) => walk(atOrBefore, false),
  };
}

const DAY_MS = 86_400_000;

const asUtc = (t: LocalTime) => Date.UTC(t.year, t.month - 1, t.day, t.hour, t.minute, t.second);

function secondOfDay(t: LocalTime): number {
  return t.hour * 3600 + t.minute * 60 + t.second;
}

function addDays(t: LocalTime, days: number): Pick<LocalTime, "year" | "month" | "day"> {
  const d = new Date(Date.UTC(t.year, t.month - 1, t.day + days));
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
}

/** Wall-clock time in one zone: an instant's local parts, and the instant of local parts. */
function createZone(timeZone: string) {
  const format = new Intl.DateTimeFormat("en-US", {
    timeZone,
    hourCycle: "h23",
    year: "numeric",
    month: "numeric",
    day: "numeric",
    hour: "numeric",
    minute: "numeric",
    second: "numeric",
  });
  const local = (ms: number): LocalTime => {
    const parts: Record<string, number> = {};
    for (const p of format.formatToParts(new Date(ms)))
      if (p.type !== "literal") parts[p.type] = Number(p.value);
    return {
      year: parts.year as number,
      month: parts.month as number,
      day: parts.day as number,
      hour: parts.hour as number,
      minute: parts.minute as number,
      second: parts.second as number,
    };
  };
  /** How far the zone's clocks are ahead of UTC at an instant, in ms. */
  const offsetAt = (ms: number) => asUtc(local(ms)) - ms;
  return {
    local,
    offsetAt,
    /**
     * The first instant the zone shows as `t`; for a time the clocks skip, the instant they skip
     * to. Offsets from a day either side cover any one change (they are hours apart at most).
     */
    instant(t: LocalTime): number {
      const wall = asUtc(t);
      const offsets = [...new Set([offsetAt(wall - DAY_MS), offsetAt(wall), offsetAt(wall + DAY_MS)])];
      const shown = offsets.map((o) => wall - o).filter((ms) => offsetAt(ms) === wall - ms);
      if (shown.length > 0) return Math.min(...shown);
      // Skipped: read with the larger offset it is an instant before the jump, with the smaller
      // one an instant after it; the jump is found between them, to the second.
      let before = (wall - Math.max(...offsets)) / 1000;
      let after = (wall - Math.min(...offsets)) / 1000;
      const offsetBefore = offsetAt(before * 1000);
      while (after - before > 1) {
        const middle = Math.floor((before + after) / 2);
        if (offsetAt(middle * 1000) === offsetBefore) before = middle;
        else after = middle;
      }
      return after * 1000;
    },
  };
}
