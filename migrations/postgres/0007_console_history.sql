CREATE TABLE "pass_errors" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "pass_errors_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"trigger_row_id" integer NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"sync_id" text,
	"user_email" text,
	"source" text,
	"error" text NOT NULL,
	"replica" text
);

CREATE TABLE "problems" (
	"mirror" text NOT NULL,
	"subject" text NOT NULL,
	"kind" text NOT NULL,
	"user_email" text,
	"server_instance_id" text,
	"source" text,
	"sync_id" text,
	"key" text,
	"reason" text NOT NULL,
	"count" integer,
	"first_seen_at" timestamp with time zone NOT NULL,
	"last_seen_at" timestamp with time zone NOT NULL,
	CONSTRAINT "problems_mirror_subject_pk" PRIMARY KEY("mirror","subject")
);

CREATE TABLE "sweep_approvals" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "sweep_approvals_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"mirror" text NOT NULL,
	"user_email" text NOT NULL,
	"server_instance_id" text NOT NULL,
	"up_to" integer NOT NULL,
	"by" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"trigger_row_id" integer,
	"used" integer DEFAULT 0 NOT NULL
);

ALTER TABLE "managed_sync_configs" ADD COLUMN "first_error_at" timestamp with time zone;
CREATE INDEX "pass_errors_trigger" ON "pass_errors" USING btree ("trigger_row_id","id");
CREATE INDEX "problems_pair" ON "problems" USING btree ("mirror","user_email","server_instance_id");
CREATE INDEX "sweep_approvals_mirror" ON "sweep_approvals" USING btree ("mirror","trigger_row_id");
CREATE INDEX "triggers_mirror_id" ON "triggers" USING btree ("mirror","id");