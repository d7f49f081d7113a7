/**
 * Why a scheduled time did not start a pass of its own (`syncmirror_ticks_skipped_total{reason}`),
 * counted by the process that recorded it (docs/scaling-out.md#scheduling):
 * - `paused`: the mirror is paused;
 * - `running`: its pass runs (here or on another replica) and a pass is already due after it;
 * - `in_flight`: a trigger is in flight with no live holder (a dead replica's, not resumed yet) and a
 *   pass is already due after it;
 * - `waiting`: a pass is already due, not started yet (every replica's slots busy);
 * - `db_unreachable`: this process could not reach the database when the time fell (once it can,
 *   the latest such time is caught up).
 */
export const SKIP_REASONS = ["paused", "running", "in_flight", "waiting", "db_unreachable"] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];
