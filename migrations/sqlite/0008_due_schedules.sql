CREATE TABLE `control_actions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`mirror` text NOT NULL,
	`action` text NOT NULL,
	`mode` text,
	`actor` text NOT NULL,
	`at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `control_actions_mirror` ON `control_actions` (`mirror`,`id`);--> statement-breakpoint
CREATE TABLE `replicas` (
	`instance_id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`started_at` text NOT NULL,
	`seen_at` text NOT NULL,
	`expires_at` text NOT NULL,
	`slots` integer NOT NULL,
	`running` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `schedules` (
	`mirror` text PRIMARY KEY NOT NULL,
	`incremental_slot` text NOT NULL,
	`full_slot` text NOT NULL,
	`due_mode` text,
	`due_reason` text,
	`due_at` text,
	`due_by` text,
	`paused_at` text,
	`paused_by` text
);
--> statement-breakpoint
ALTER TABLE `triggers` ADD `started_by` text;--> statement-breakpoint
ALTER TABLE `triggers` ADD `started_by_name` text;--> statement-breakpoint
ALTER TABLE `triggers` ADD `due_at` text;--> statement-breakpoint
ALTER TABLE `triggers` ADD `due_reason` text;