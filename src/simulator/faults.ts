/**
 * Fault injection: the next N requests to a route (or to any route, "*") misbehave in one chosen
 * way, plus export quirks for reliability tests. Routes are named "METHOD /template", as in the
 * request log: "GET /sync-task/{sync_id}/export".
 */
import type { ExportQuirkSwitch } from "./export.js";

export type Fault =
  /**
   * 429 or 5xx without handling the request. `retryAfterSeconds` (0 allowed) sets `Retry-After`,
   * absent sends none; `retryAfterForm: "http-date"` sends it as the HTTP date that many seconds
   * from now (this machine's clock, which the client's `Retry-After` arithmetic uses too).
   */
  | {
      kind: "429" | "500" | "502" | "503";
      retryAfterSeconds?: number;
      retryAfterForm?: "seconds" | "http-date";
      times?: number;
    }
  /** 401: the token rejected on this route only, as an expired token or revoked grant would be mid-pass. */
  | { kind: "401"; times?: number }
  /** The connection is destroyed before anything is handled or answered. */
  | { kind: "reset"; times?: number }
  /** Waits `ms` before handling the request normally. */
  | { kind: "delay"; ms: number; times?: number }
  /** Handled normally, then answered 200 with a body that is not JSON. */
  | { kind: "malformed"; times?: number }
  /**
   * Handled normally; a 2xx JSON body loses `field` (default: its first top-level field). A dotted
   * path reaches nested fields, `*` for each element of an array (`items.*.servers`); a list drops each.
   */
  | { kind: "missing-field"; field?: string | readonly string[]; times?: number }
  /**
   * Handled normally; every object of a 2xx JSON body gains fields the API does not document (a
   * newer service), except inside values kept verbatim (a resource's `fields`, `metadata`, ...).
   */
  | { kind: "extra-fields"; times?: number }
  /**
   * Handled normally; each item of a 2xx page keeps only `id`, `name` and `created_at`: a list
   * lighter than a read, which the API allows (it documents the full config only for a read).
   */
  | { kind: "light-items"; times?: number }
  /** Handled fully (a trigger creates its runs), then the connection is destroyed unanswered. */
  | { kind: "drop-after"; times?: number }
  /**
   * Handled normally; a 2xx answer becomes the export's 409 "not finished yet", each source of the
   * answer listed as RUNNING: a run list that shows a run finished before its export is ready.
   */
  | { kind: "not-finished"; times?: number }
  /** Handled normally; a 2xx export page says it was date-filtered at `since`, whatever was asked. */
  | { kind: "date-filtered"; since: string; times?: number };

export type FaultKind = Fault["kind"];

export interface PendingFault {
  route: string;
  fault: Fault;
  remaining: number;
}

/** The programmatic fault API (`sim.faults`). */
export interface FaultApi {
  /** The next `fault.times` (default 1; Infinity allowed) requests to `route` get `fault`. */
  inject(route: string, fault: Fault): void;
  /** Drops every pending fault and quirk. */
  clear(): void;
  /** Faults not yet used up, in injection order. */
  pending(): PendingFault[];
  /**
   * Export quirks, each for the next `times` (default 1) export pages served with offset > 0:
   * `repeat-key` starts that page one resource early (the previous page's last key comes again);
   * `engine-change` bumps the engine version before building that page (and it stays bumped),
   * so one export's pages disagree on `engine_version` and content hashes.
   */
  quirk(kind: "repeat-key" | "engine-change", times?: number): void;
}

export interface FaultController extends FaultApi, ExportQuirkSwitch {
  /** Takes the fault for a request to `route` ("METHOD /template"), consuming one use. */
  take(route: string): Fault | undefined;
}

export function createFaults(): FaultController {
  let faults: PendingFault[] = [];
  const quirks = { "repeat-key": 0, "engine-change": 0 };
  const takeQuirk = (kind: keyof typeof quirks) => {
    if (quirks[kind] <= 0) return false;
    quirks[kind] -= 1;
    return true;
  };
  return {
    inject(route, fault) {
      const times = fault.times ?? 1;
      if (!(times > 0)) throw new RangeError("fault.times must be > 0");
      if (route !== "*" && !/^[A-Z]+ \//.test(route))
        throw new Error(`route must be "METHOD /path" or "*": ${route}`);
      faults.push({ route, fault, remaining: times });
    },
    clear() {
      faults = [];
      quirks["repeat-key"] = 0;
      quirks["engine-change"] = 0;
    },
    pending: () => faults.map((f) => ({ ...f })),
    quirk(kind, times = 1) {
      quirks[kind] += times;
    },
    take(route) {
      const entry = faults.find((f) => f.remaining > 0 && (f.route === "*" || f.route === route));
      if (!entry) return undefined;
      entry.remaining -= 1;
      if (entry.remaining <= 0) faults = faults.filter((f) => f !== entry);
      return entry.fault;
    },
    takeRepeatKey: () => takeQuirk("repeat-key"),
    takeEngineChange: () => takeQuirk("engine-change"),
  };
}
