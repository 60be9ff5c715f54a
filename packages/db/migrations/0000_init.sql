CREATE TABLE "activity_definition_versions" (
	"activity_id" uuid NOT NULL,
	"version" integer NOT NULL,
	"name" text NOT NULL,
	"enabled" boolean NOT NULL,
	"definition" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "activity_definition_versions_activity_id_version_pk" PRIMARY KEY("activity_id","version")
);
--> statement-breakpoint
CREATE TABLE "activity_definitions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"version" integer NOT NULL,
	"enabled" boolean NOT NULL,
	"definition" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "activity_runs" (
	"run_id" uuid PRIMARY KEY NOT NULL,
	"workflow_id" text NOT NULL,
	"activity_id" uuid NOT NULL,
	"activity_version" integer NOT NULL,
	"trigger_type" text NOT NULL,
	"scheduled_for" timestamp with time zone,
	"event_id" text,
	"window_start" timestamp with time zone,
	"window_end" timestamp with time zone,
	"status" text NOT NULL,
	"error" jsonb,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "activity_runs_status_ck" CHECK ("activity_runs"."status" IN ('running','succeeded','failed','cancelled')),
	CONSTRAINT "activity_runs_trigger_ck" CHECK ("activity_runs"."trigger_type" IN ('event','cron','manual','backfill'))
);
--> statement-breakpoint
CREATE TABLE "event_routes" (
	"event_id" text NOT NULL,
	"activity_id" uuid NOT NULL,
	"activity_version" integer NOT NULL,
	"activity_name" text NOT NULL,
	"workflow_id" text NOT NULL,
	"run_id" uuid NOT NULL,
	"outcome" text DEFAULT 'pending' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "event_routes_event_id_activity_id_pk" PRIMARY KEY("event_id","activity_id"),
	CONSTRAINT "event_routes_outcome_ck" CHECK ("event_routes"."outcome" IN ('pending','started','duplicate'))
);
--> statement-breakpoint
CREATE TABLE "events" (
	"event_id" text PRIMARY KEY NOT NULL,
	"source" text NOT NULL,
	"event_type" text NOT NULL,
	"subject" text,
	"occurred_at" timestamp with time zone NOT NULL,
	"payload" jsonb NOT NULL,
	"fingerprint" text NOT NULL,
	"id_origin" text NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	"routing_state" text DEFAULT 'pending' NOT NULL,
	"routing_attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"routed_at" timestamp with time zone,
	"last_error" text,
	CONSTRAINT "events_routing_state_ck" CHECK ("events"."routing_state" IN ('pending','routed'))
);
--> statement-breakpoint
CREATE TABLE "task_instances" (
	"id" uuid PRIMARY KEY NOT NULL,
	"run_id" uuid NOT NULL,
	"task_type" text NOT NULL,
	"task_index" integer NOT NULL,
	"workflow_id" text NOT NULL,
	"status" text NOT NULL,
	"attempt_count" integer DEFAULT 0 NOT NULL,
	"result" jsonb,
	"error" jsonb,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "task_instances_status_ck" CHECK ("task_instances"."status" IN ('running','succeeded','failed','cancelled'))
);
--> statement-breakpoint
CREATE UNIQUE INDEX "activity_definitions_name_live_uq" ON "activity_definitions" USING btree ("name") WHERE "activity_definitions"."deleted_at" IS NULL;--> statement-breakpoint
CREATE INDEX "activity_definitions_enabled_idx" ON "activity_definitions" USING btree ("enabled") WHERE "activity_definitions"."deleted_at" IS NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "activity_runs_workflow_id_uq" ON "activity_runs" USING btree ("workflow_id");--> statement-breakpoint
CREATE INDEX "activity_runs_activity_created_idx" ON "activity_runs" USING btree ("activity_id","created_at","run_id");--> statement-breakpoint
CREATE INDEX "activity_runs_created_idx" ON "activity_runs" USING btree ("created_at","run_id");--> statement-breakpoint
CREATE INDEX "events_pending_idx" ON "events" USING btree ("next_attempt_at") WHERE "events"."routing_state" = 'pending';--> statement-breakpoint
CREATE INDEX "events_received_idx" ON "events" USING btree ("received_at");--> statement-breakpoint
CREATE UNIQUE INDEX "task_instances_workflow_id_uq" ON "task_instances" USING btree ("workflow_id");--> statement-breakpoint
CREATE UNIQUE INDEX "task_instances_run_index_uq" ON "task_instances" USING btree ("run_id","task_index");