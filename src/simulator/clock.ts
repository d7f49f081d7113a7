/** The simulated service's clock: every timestamp the simulator hands out comes from here. */
export interface SimClock {
  now(): Date;
  advance(ms: number): void;
  set(date: Date): void;
}

/** Clock options: a fixed start, how far each recorded event moves time, and wall-clock mode. */
export interface SimClockOptions {
  /** Default 2026-01-05T09:00:00Z (or the wall clock at start when `real`). */
  start?: Date;
  /**
   * Milliseconds the clock moves after each event it stamps (a trigger's created_at, a source's
   * started_at / completed_at, a continue, a document edit or add without an explicit modifiedAt),
   * so those events are strictly ordered in server time. Default 1000 (0 in `real` mode); 0 freezes
   * the clock between explicit `advance` / `set` calls.
   */
  stepMs?: number;
  /** Follow the wall clock from `start` (plus any advance/set offsets). Used by `syncmirror simulate`. */
  real?: boolean;
}

/** The simulator's own view of the clock: `tick()` stamps an event and moves time on. */
export interface InternalClock extends SimClock {
  nowMs(): number;
  /** Returns the current time (ms) and then moves the clock by `stepMs`. */
  tick(): number;
}

const DEFAULT_START = Date.parse("2026-01-05T09:00:00Z");

export function createSimClock(options: SimClockOptions = {}): InternalClock {
  const real = options.real === true;
  const startMs = options.start?.getTime() ?? (real ? Date.now() : DEFAULT_START);
  if (Number.isNaN(startMs)) throw new TypeError("clock.start is not a valid date");
  const stepMs = options.stepMs ?? (real ? 0 : 1000);
  const wallAtStart = Date.now();
  let offsetMs = 0;
  const nowMs = () => startMs + offsetMs + (real ? Date.now() - wallAtStart : 0);
  return {
    nowMs,
    now: () => new Date(nowMs()),
    advance(ms) {
      if (!Number.isFinite(ms)) throw new TypeError("clock.advance needs a finite number of ms");
      offsetMs += ms;
    },
    set(date) {
      offsetMs += date.getTime() - nowMs();
    },
    tick() {
      const at = nowMs();
      offsetMs += stepMs;
      return at;
    },
  };
}

function isoCore(ms: number): string {
  const iso = new Date(ms).toISOString();
  return iso.endsWith(".000Z") ? iso.slice(0, 19) : iso.slice(0, 23);
}

/** `2026-11-21T06:00:02+00:00`, the service's style for run and source timestamps. */
export function formatOffsetIso(ms: number): string {
  return `${isoCore(ms)}+00:00`;
}

/** `2026-11-20T14:31:00Z`, the service's style for resource timestamps. */
export function formatZuluIso(ms: number): string {
  return `${isoCore(ms)}Z`;
}
