CREATE TABLE "event_replays" (
	"run_id" uuid PRIMARY KEY NOT NULL,
	"workflow_id" text NOT NULL,
	"event_id" text NOT NULL,
	"activity_id" uuid NOT NULL,
	"activity_version" integer NOT NULL,
	"replay_of" uuid NOT NULL,
	"attempt" integer NOT NULL,
	"request_key" text NOT NULL,
	"bulk_replay_id" uuid,
	"requested_by" text,
	"requested_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "event_replays_attempt_ck" CHECK ("event_replays"."attempt" >= 1)
);
--> statement-breakpoint
CREATE UNIQUE INDEX "event_replays_workflow_id_uq" ON "event_replays" USING btree ("workflow_id");--> statement-breakpoint
CREATE UNIQUE INDEX "event_replays_of_attempt_uq" ON "event_replays" USING btree ("replay_of","attempt");--> statement-breakpoint
CREATE UNIQUE INDEX "event_replays_of_key_uq" ON "event_replays" USING btree ("replay_of","request_key");--> statement-breakpoint
CREATE INDEX "event_replays_event_idx" ON "event_replays" USING btree ("event_id");--> statement-breakpoint
CREATE TABLE "bulk_replays" (
	"id" uuid PRIMARY KEY NOT NULL,
	"filter" jsonb NOT NULL,
	"mode" text NOT NULL,
	"status" text NOT NULL,
	"total" integer NOT NULL,
	"processed" integer DEFAULT 0 NOT NULL,
	"started" integer DEFAULT 0 NOT NULL,
	"skipped" integer DEFAULT 0 NOT NULL,
	"skipped_reasons" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"cursor_received_at" timestamp (3) with time zone,
	"cursor_event_id" text,
	"lease_until" timestamp (3) with time zone,
	"lease_owner" text,
	"requested_by" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp (3) with time zone,
	CONSTRAINT "bulk_replays_status_ck" CHECK ("bulk_replays"."status" IN ('running','completed')),
	CONSTRAINT "bulk_replays_mode_ck" CHECK ("bulk_replays"."mode" IN ('if_no_runs','force'))
);
--> statement-breakpoint
CREATE INDEX "bulk_replays_running_idx" ON "bulk_replays" USING btree ("lease_until") WHERE "bulk_replays"."status" = 'running';
