ALTER TABLE `leases` ADD `holder_name` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `leases` ADD `epoch` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `leases` ADD `lease_seconds` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `leases` ADD `released_at` text;