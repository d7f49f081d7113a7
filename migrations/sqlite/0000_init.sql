CREATE TABLE `changes` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`key` text NOT NULL,
	`op` text NOT NULL,
	`at` text NOT NULL,
	`mirror` text,
	`sync_id` text
);
--> statement-breakpoint
CREATE INDEX `changes_run_key` ON `changes` (`sync_id`,`key`);--> statement-breakpoint
CREATE TABLE `mirror_state` (
	`mirror` text PRIMARY KEY NOT NULL,
	`sync_config_id` text NOT NULL,
	`last_incremental_success_at` text,
	`last_full_success_at` text,
	`last_outcome` text,
	`last_outcome_at` text,
	`last_message` text,
	`held_revocations` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE `pairs` (
	`mirror` text NOT NULL,
	`user_email` text NOT NULL,
	`server_instance_id` text NOT NULL,
	`watermark` text,
	`first_seen_at` text NOT NULL,
	`awaiting_baseline` integer DEFAULT false NOT NULL,
	`skip_reason` text,
	`auth_status` text,
	`retired_at` text,
	`retired_reason` text,
	PRIMARY KEY(`mirror`, `user_email`, `server_instance_id`)
);
--> statement-breakpoint
CREATE TABLE `resource_access` (
	`mirror` text NOT NULL,
	`user_email` text NOT NULL,
	`key` text NOT NULL,
	`server_instance_id` text NOT NULL,
	`source` text NOT NULL,
	`last_seen_at` text NOT NULL,
	`missed_full_count` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`mirror`, `user_email`, `key`)
);
--> statement-breakpoint
CREATE INDEX `resource_access_pair` ON `resource_access` (`mirror`,`user_email`,`server_instance_id`,`last_seen_at`);--> statement-breakpoint
CREATE INDEX `resource_access_key` ON `resource_access` (`key`);--> statement-breakpoint
CREATE TABLE `resources` (
	`key` text PRIMARY KEY NOT NULL,
	`content_hash` text NOT NULL,
	`content_text` text,
	`content_format` text,
	`content_status` text,
	`title` text,
	`url` text,
	`type` text,
	`source_type` text NOT NULL,
	`server_instance_id` text NOT NULL,
	`native_id` text NOT NULL,
	`modified_at` text,
	`fetched_at` text,
	`fields` text,
	`metadata` text,
	`relations` text,
	`attachments` text,
	`provenance` text,
	`deleted_at` text,
	`engine_version` text,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `resources_deleted_at` ON `resources` (`deleted_at`);--> statement-breakpoint
CREATE TABLE `run_sources` (
	`sync_id` text NOT NULL,
	`source` text NOT NULL,
	`source_type` text NOT NULL,
	`server_instance_id` text NOT NULL,
	`task_status` text NOT NULL,
	`export_status` text,
	`counts` text,
	`swept` text,
	PRIMARY KEY(`sync_id`, `source`)
);
--> statement-breakpoint
CREATE TABLE `runs` (
	`sync_id` text PRIMARY KEY NOT NULL,
	`trigger_row_id` integer NOT NULL,
	`mirror` text NOT NULL,
	`user_email` text NOT NULL,
	`status` text NOT NULL,
	`created_at` text,
	`ingest` text DEFAULT 'waiting' NOT NULL,
	`next_offset` integer DEFAULT 0,
	`continues_sent` integer DEFAULT 0 NOT NULL,
	`schema_version` text,
	`engine_version` text,
	`diagnostics` text,
	`error` text,
	`upserted` integer DEFAULT 0 NOT NULL,
	`unchanged` integer DEFAULT 0 NOT NULL,
	`rejected` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `runs_trigger` ON `runs` (`trigger_row_id`);--> statement-breakpoint
CREATE TABLE `triggers` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`mirror` text NOT NULL,
	`mode` text NOT NULL,
	`since` text,
	`state` text NOT NULL,
	`trigger_id` text,
	`known_before` text,
	`intent_at` text NOT NULL,
	`allow_mass_delete` integer DEFAULT false NOT NULL,
	`adopted` integer DEFAULT false NOT NULL,
	`skipped` text,
	`skipped_count` integer DEFAULT 0 NOT NULL,
	`started_at` text,
	`finished_at` text,
	`outcome` text,
	`message` text,
	`summary` text,
	`deleted` integer DEFAULT 0 NOT NULL,
	`revoked` integer DEFAULT 0 NOT NULL,
	`held` integer DEFAULT 0 NOT NULL,
	`sweeps_held` integer DEFAULT 0 NOT NULL,
	`leavers_unknown` integer DEFAULT false NOT NULL,
	`leavers_swept` integer DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `triggers_trigger_id_unique` ON `triggers` (`trigger_id`);--> statement-breakpoint
CREATE INDEX `triggers_mirror_state` ON `triggers` (`mirror`,`state`);