CREATE TABLE "run_reruns" (
	"run_id" uuid PRIMARY KEY NOT NULL,
	"workflow_id" text NOT NULL,
	"rerun_of" uuid NOT NULL,
	"attempt" integer NOT NULL,
	"idempotency_key" text NOT NULL,
	"source_run_id" uuid NOT NULL,
	"from_task_index" integer NOT NULL,
	"resume" jsonb,
	"bulk_rerun_id" uuid,
	"requested_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "run_reruns_attempt_ck" CHECK ("run_reruns"."attempt" >= 1)
);
--> statement-breakpoint
CREATE UNIQUE INDEX "run_reruns_workflow_id_uq" ON "run_reruns" USING btree ("workflow_id");--> statement-breakpoint
CREATE UNIQUE INDEX "run_reruns_of_attempt_uq" ON "run_reruns" USING btree ("rerun_of","attempt");--> statement-breakpoint
CREATE UNIQUE INDEX "run_reruns_of_key_uq" ON "run_reruns" USING btree ("rerun_of","idempotency_key");--> statement-breakpoint
CREATE TABLE "bulk_reruns" (
	"id" uuid PRIMARY KEY NOT NULL,
	"filter" jsonb NOT NULL,
	"from_mode" text NOT NULL,
	"status" text NOT NULL,
	"total" integer NOT NULL,
	"processed" integer DEFAULT 0 NOT NULL,
	"started" integer DEFAULT 0 NOT NULL,
	"skipped" integer DEFAULT 0 NOT NULL,
	"skipped_reasons" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"cursor_created_at" timestamp (3) with time zone,
	"cursor_run_id" uuid,
	"lease_until" timestamp (3) with time zone,
	"lease_owner" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp (3) with time zone,
	CONSTRAINT "bulk_reruns_status_ck" CHECK ("bulk_reruns"."status" IN ('running','completed')),
	CONSTRAINT "bulk_reruns_from_mode_ck" CHECK ("bulk_reruns"."from_mode" IN ('start','failed_task'))
);
--> statement-breakpoint
CREATE INDEX "bulk_reruns_running_idx" ON "bulk_reruns" USING btree ("lease_until") WHERE "bulk_reruns"."status" = 'running';
