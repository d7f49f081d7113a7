ALTER TABLE "runs" ADD COLUMN "keys_new" integer DEFAULT 0 NOT NULL;
ALTER TABLE "runs" ADD COLUMN "keys_changed" integer DEFAULT 0 NOT NULL;