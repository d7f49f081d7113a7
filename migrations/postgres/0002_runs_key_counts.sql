ALTER TABLE "runs" ADD COLUMN "keys_new" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "keys_changed" integer DEFAULT 0 NOT NULL;