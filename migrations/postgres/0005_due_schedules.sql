CREATE TABLE "control_actions" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "control_actions_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"mirror" text NOT NULL,
	"action" text NOT NULL,
	"mode" text,
	"actor" text NOT NULL,
	"at" timestamp with time zone NOT NULL
);

CREATE TABLE "replicas" (
	"instance_id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"seen_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"slots" integer NOT NULL,
	"running" integer NOT NULL
);

CREATE TABLE "schedules" (
	"mirror" text PRIMARY KEY NOT NULL,
	"incremental_slot" timestamp with time zone NOT NULL,
	"full_slot" timestamp with time zone NOT NULL,
	"due_mode" text,
	"due_reason" text,
	"due_at" timestamp with time zone,
	"due_by" text,
	"paused_at" timestamp with time zone,
	"paused_by" text
);

ALTER TABLE "triggers" ADD COLUMN "started_by" text;
ALTER TABLE "triggers" ADD COLUMN "started_by_name" text;
ALTER TABLE "triggers" ADD COLUMN "due_at" timestamp with time zone;
ALTER TABLE "triggers" ADD COLUMN "due_reason" text;
CREATE INDEX "control_actions_mirror" ON "control_actions" USING btree ("mirror","id");