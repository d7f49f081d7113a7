ALTER TABLE "leases" ADD COLUMN "holder_name" text DEFAULT '' NOT NULL;
ALTER TABLE "leases" ADD COLUMN "epoch" integer DEFAULT 0 NOT NULL;
ALTER TABLE "leases" ADD COLUMN "lease_seconds" integer DEFAULT 0 NOT NULL;
ALTER TABLE "leases" ADD COLUMN "released_at" timestamp with time zone;