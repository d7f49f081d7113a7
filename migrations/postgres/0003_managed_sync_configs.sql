CREATE TABLE "managed_sync_configs" (
	"mirror" text PRIMARY KEY NOT NULL,
	"sync_config_id" text,
	"project_id" text,
	"name" text,
	"origin" text,
	"creating_at" timestamp with time zone,
	"adopted_at" timestamp with time zone,
	"applied_hash" text,
	"applied_at" timestamp with time zone,
	"full_pending_after" integer,
	"last_error" text,
	"last_error_at" timestamp with time zone
);
