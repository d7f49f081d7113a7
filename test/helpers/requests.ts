/**
 * What the simulator was asked: the one way the suites count upstream requests.
 */
import type { Harness } from "./mirror-harness.js";

/** Requests to a route ("METHOD /template"), only those answered with `status` when given. */
export function answered(h: Harness, route: string, status?: number): number {
  return h.sim.requests.filter(
    (r) => `${r.method} ${r.route}` === route && (status === undefined || r.status === status),
  ).length;
}

/** How many trigger POSTs reached the simulator. */
export function triggerPosts(h: Harness): number {
  return answered(h, "POST /sync-task");
}
