CREATE TABLE "event_waits" (
	"wait_id" text PRIMARY KEY NOT NULL,
	"run_id" uuid NOT NULL,
	"activity_id" uuid NOT NULL,
	"task_index" integer NOT NULL,
	"event_type" text NOT NULL,
	"match" text,
	"trigger_event" jsonb,
	"status" text DEFAULT 'waiting' NOT NULL,
	"matched_event_id" text,
	"signal_state" text,
	"detail" text,
	"registered_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL,
	"closed_at" timestamp (3) with time zone,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "event_waits_status_ck" CHECK ("event_waits"."status" IN ('waiting','matched','timed_out','cancelled')),
	CONSTRAINT "event_waits_signal_state_ck" CHECK ("event_waits"."signal_state" IS NULL OR "event_waits"."signal_state" IN ('pending','delivered','already_closed')),
	CONSTRAINT "event_waits_matched_ck" CHECK (("event_waits"."status" = 'matched') = ("event_waits"."matched_event_id" IS NOT NULL))
);
--> statement-breakpoint
CREATE INDEX "event_waits_open_type_idx" ON "event_waits" USING btree ("event_type","registered_at") WHERE "event_waits"."status" = 'waiting';--> statement-breakpoint
CREATE INDEX "event_waits_matched_event_idx" ON "event_waits" USING btree ("matched_event_id") WHERE "event_waits"."matched_event_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "event_waits_run_idx" ON "event_waits" USING btree ("run_id");--> statement-breakpoint
CREATE TABLE "event_wait_scans" (
	"event_id" text PRIMARY KEY NOT NULL REFERENCES "events" ("event_id") ON DELETE CASCADE,
	"examined" integer NOT NULL,
	"capped" boolean NOT NULL,
	"matched" integer NOT NULL,
	"errors" integer NOT NULL,
	"scanned_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
