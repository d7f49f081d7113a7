CREATE TABLE "changes" (
	"seq" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "changes_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"key" text NOT NULL,
	"op" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"mirror" text,
	"sync_id" text
);

CREATE TABLE "dry_run_revoke" (
	"trigger_row_id" integer NOT NULL,
	"mirror" text NOT NULL,
	"user_email" text NOT NULL,
	"key" text NOT NULL,
	CONSTRAINT "dry_run_revoke_trigger_row_id_mirror_user_email_key_pk" PRIMARY KEY("trigger_row_id","mirror","user_email","key")
);

CREATE TABLE "dry_run_seen" (
	"trigger_row_id" integer NOT NULL,
	"user_email" text NOT NULL,
	"key" text NOT NULL,
	CONSTRAINT "dry_run_seen_trigger_row_id_user_email_key_pk" PRIMARY KEY("trigger_row_id","user_email","key")
);

CREATE TABLE "leases" (
	"mirror" text PRIMARY KEY NOT NULL,
	"holder" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);

CREATE TABLE "mirror_state" (
	"mirror" text PRIMARY KEY NOT NULL,
	"sync_config_id" text NOT NULL,
	"last_incremental_success_at" timestamp with time zone,
	"last_full_success_at" timestamp with time zone,
	"last_outcome" text,
	"last_outcome_at" timestamp with time zone,
	"last_message" text,
	"held_revocations" integer DEFAULT 0 NOT NULL
);

CREATE TABLE "pairs" (
	"mirror" text NOT NULL,
	"user_email" text NOT NULL,
	"server_instance_id" text NOT NULL,
	"watermark" timestamp with time zone,
	"first_seen_at" timestamp with time zone NOT NULL,
	"awaiting_baseline" boolean DEFAULT false NOT NULL,
	"skip_reason" text,
	"auth_status" text,
	"retired_at" timestamp with time zone,
	"retired_reason" text,
	CONSTRAINT "pairs_mirror_user_email_server_instance_id_pk" PRIMARY KEY("mirror","user_email","server_instance_id")
);

CREATE TABLE "resource_access" (
	"mirror" text NOT NULL,
	"user_email" text NOT NULL,
	"key" text NOT NULL,
	"server_instance_id" text NOT NULL,
	"source" text NOT NULL,
	"last_seen_at" timestamp with time zone NOT NULL,
	"missed_full_count" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "resource_access_mirror_user_email_key_pk" PRIMARY KEY("mirror","user_email","key")
);

CREATE TABLE "resources" (
	"key" text PRIMARY KEY NOT NULL,
	"content_hash" text NOT NULL,
	"content_text" text,
	"content_format" text,
	"content_status" text,
	"title" text,
	"url" text,
	"type" text,
	"source_type" text NOT NULL,
	"server_instance_id" text NOT NULL,
	"native_id" text NOT NULL,
	"modified_at" timestamp with time zone,
	"fetched_at" timestamp with time zone,
	"fields" jsonb,
	"metadata" jsonb,
	"relations" jsonb,
	"attachments" jsonb,
	"provenance" jsonb,
	"deleted_at" timestamp with time zone,
	"engine_version" text,
	"updated_at" timestamp with time zone NOT NULL
);

CREATE TABLE "run_sources" (
	"sync_id" text NOT NULL,
	"source" text NOT NULL,
	"source_type" text NOT NULL,
	"server_instance_id" text NOT NULL,
	"task_status" text NOT NULL,
	"export_status" text,
	"counts" jsonb,
	"swept" text,
	CONSTRAINT "run_sources_sync_id_source_pk" PRIMARY KEY("sync_id","source")
);

CREATE TABLE "runs" (
	"sync_id" text PRIMARY KEY NOT NULL,
	"trigger_row_id" integer NOT NULL,
	"mirror" text NOT NULL,
	"user_email" text NOT NULL,
	"status" text NOT NULL,
	"created_at" timestamp with time zone,
	"ingest" text DEFAULT 'waiting' NOT NULL,
	"next_offset" integer DEFAULT 0,
	"continues_sent" integer DEFAULT 0 NOT NULL,
	"continue_pending" jsonb,
	"schema_version" text,
	"engine_version" text,
	"diagnostics" jsonb,
	"error" text,
	"upserted" integer DEFAULT 0 NOT NULL,
	"unchanged" integer DEFAULT 0 NOT NULL,
	"rejected" integer DEFAULT 0 NOT NULL
);

CREATE TABLE "ticks" (
	"mirror" text NOT NULL,
	"mode" text NOT NULL,
	"tick_at" timestamp with time zone NOT NULL,
	"holder" text NOT NULL,
	CONSTRAINT "ticks_mirror_mode_tick_at_pk" PRIMARY KEY("mirror","mode","tick_at")
);

CREATE TABLE "triggers" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "triggers_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"mirror" text NOT NULL,
	"mode" text NOT NULL,
	"since" timestamp with time zone,
	"state" text NOT NULL,
	"trigger_id" text,
	"known_before" timestamp with time zone,
	"intent_at" timestamp with time zone NOT NULL,
	"allow_mass_delete" boolean DEFAULT false NOT NULL,
	"adopted" boolean DEFAULT false NOT NULL,
	"skipped" jsonb,
	"skipped_count" integer DEFAULT 0 NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"outcome" text,
	"message" text,
	"summary" jsonb,
	"deleted" integer DEFAULT 0 NOT NULL,
	"revoked" integer DEFAULT 0 NOT NULL,
	"held" integer DEFAULT 0 NOT NULL,
	"sweeps_held" integer DEFAULT 0 NOT NULL,
	"leavers_unknown" boolean DEFAULT false NOT NULL,
	"leavers_swept" boolean DEFAULT false NOT NULL,
	CONSTRAINT "triggers_trigger_id_unique" UNIQUE("trigger_id")
);

CREATE INDEX "changes_run_key" ON "changes" USING btree ("sync_id","key");
CREATE INDEX "resource_access_pair" ON "resource_access" USING btree ("mirror","user_email","server_instance_id","last_seen_at");
CREATE INDEX "resource_access_key" ON "resource_access" USING btree ("key");
CREATE INDEX "resource_access_user" ON "resource_access" USING btree ("user_email","key");
CREATE INDEX "resources_deleted_at" ON "resources" USING btree ("deleted_at");
CREATE INDEX "runs_trigger" ON "runs" USING btree ("trigger_row_id");
CREATE INDEX "triggers_mirror_state" ON "triggers" USING btree ("mirror","state");