/**
 * Why a scheduled time did not start a pass of its own (`syncmirror_ticks_skipped_total{reason}`),
 * counted by the process that recorded it (docs/scaling-out.md#scheduling):
 * - `paused`: the mirror is paused;
 * - `in_flight`: its pass is in flight (running here or on another replica, or a dead replica's
 *   trigger not resumed yet): the tick is coalesced into the one pass due after it (the first such
 *   tick makes it due, and is counted too: it started no pass when it fell);
 * - `waiting`: a pass is already due, not started yet (every replica's slots busy);
 * - `db_unreachable`: this process could not reach the database when the time fell (once it can,
 *   the latest such time is caught up).
 */
export const SKIP_REASONS = ["paused", "in_flight", "waiting", "db_unreachable"] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];
