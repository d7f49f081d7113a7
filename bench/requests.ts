/** What the simulator's request log says about one workload: calls by route, polling rounds. */
import type { LoggedRequest } from "./sim-process.js";

export interface RouteCount {
  /** "GET /sync-task/{sync_id}/export" */
  route: string;
  count: number;
  /** Answers other than 2xx (or no answer). */
  failed: number;
}

export function countByRoute(entries: readonly LoggedRequest[]): RouteCount[] {
  const counts = new Map<string, RouteCount>();
  for (const e of entries) {
    const route = `${e.method} ${e.route ?? e.path}`;
    const c = counts.get(route) ?? { route, count: 0, failed: 0 };
    c.count++;
    if (e.status === null || e.status >= 300) c.failed++;
    counts.set(route, c);
  }
  return [...counts.values()].sort((a, b) => b.count - a.count);
}

export interface PollingStats {
  runs: number;
  rounds: number;
  /** Run-list calls (GET /sync-task) per round, in order. */
  listCallsPerRound: number[];
  /** Run-detail calls (GET /sync-task/{sync_id}) per round, in order. */
  detailCallsPerRound: number[];
  /** Every call of the workload until the mirror was done, exports included. */
  totalCalls: number;
}

/**
 * Rounds of the mirror's waiting: each round lists the trigger's runs from the first page (a run
 * list call without `cursor`) onward; run-detail reads count towards the round they fall in.
 */
export function mirrorPolling(entries: readonly LoggedRequest[], runs: number): PollingStats {
  const list: number[] = [];
  const detail: number[] = [];
  for (const e of entries) {
    if (e.method !== "GET") continue;
    if (e.route === "/sync-task" && e.query.trigger_id !== undefined) {
      if (e.query.cursor === undefined) {
        list.push(0);
        detail.push(0);
      }
      list[list.length - 1] = (list.at(-1) ?? 0) + 1;
    } else if (e.route === "/sync-task/{sync_id}" && detail.length > 0) {
      detail[detail.length - 1] = (detail.at(-1) ?? 0) + 1;
    }
  }
  return {
    runs,
    rounds: list.length,
    listCallsPerRound: list,
    detailCallsPerRound: detail,
    totalCalls: entries.length,
  };
}
