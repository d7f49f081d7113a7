ALTER TABLE `runs` ADD `keys_new` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `runs` ADD `keys_changed` integer DEFAULT 0 NOT NULL;