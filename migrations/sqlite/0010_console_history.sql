CREATE TABLE `pass_errors` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`trigger_row_id` integer NOT NULL,
	`at` text NOT NULL,
	`sync_id` text,
	`user_email` text,
	`source` text,
	`error` text NOT NULL,
	`replica` text
);
--> statement-breakpoint
CREATE INDEX `pass_errors_trigger` ON `pass_errors` (`trigger_row_id`,`id`);--> statement-breakpoint
CREATE TABLE `problems` (
	`mirror` text NOT NULL,
	`subject` text NOT NULL,
	`kind` text NOT NULL,
	`user_email` text,
	`server_instance_id` text,
	`source` text,
	`sync_id` text,
	`key` text,
	`reason` text NOT NULL,
	`count` integer,
	`first_seen_at` text NOT NULL,
	`last_seen_at` text NOT NULL,
	PRIMARY KEY(`mirror`, `subject`)
);
--> statement-breakpoint
CREATE INDEX `problems_pair` ON `problems` (`mirror`,`user_email`,`server_instance_id`);--> statement-breakpoint
CREATE TABLE `sweep_approvals` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`mirror` text NOT NULL,
	`user_email` text NOT NULL,
	`server_instance_id` text NOT NULL,
	`up_to` integer NOT NULL,
	`by` text NOT NULL,
	`at` text NOT NULL,
	`trigger_row_id` integer,
	`used` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `sweep_approvals_mirror` ON `sweep_approvals` (`mirror`,`trigger_row_id`);--> statement-breakpoint
ALTER TABLE `managed_sync_configs` ADD `first_error_at` text;--> statement-breakpoint
CREATE INDEX `triggers_mirror_id` ON `triggers` (`mirror`,`id`);