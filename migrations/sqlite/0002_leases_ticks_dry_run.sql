CREATE TABLE `dry_run_revoke` (
	`trigger_row_id` integer NOT NULL,
	`mirror` text NOT NULL,
	`user_email` text NOT NULL,
	`key` text NOT NULL,
	PRIMARY KEY(`trigger_row_id`, `mirror`, `user_email`, `key`)
);
--> statement-breakpoint
CREATE TABLE `dry_run_seen` (
	`trigger_row_id` integer NOT NULL,
	`user_email` text NOT NULL,
	`key` text NOT NULL,
	PRIMARY KEY(`trigger_row_id`, `user_email`, `key`)
);
--> statement-breakpoint
CREATE TABLE `leases` (
	`mirror` text PRIMARY KEY NOT NULL,
	`holder` text NOT NULL,
	`expires_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `ticks` (
	`mirror` text NOT NULL,
	`mode` text NOT NULL,
	`tick_at` text NOT NULL,
	`holder` text NOT NULL,
	PRIMARY KEY(`mirror`, `mode`, `tick_at`)
);
