/** Why a cron tick did not start a pass (`syncmirror_ticks_skipped_total{reason}`). */
export const SKIP_REASONS = ["running", "in_flight", "overlap", "taken", "leased"] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];
