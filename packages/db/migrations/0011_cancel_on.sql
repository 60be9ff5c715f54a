ALTER TABLE "activity_runs" ADD COLUMN "cancelled_by_event" text;--> statement-breakpoint
CREATE INDEX "activity_runs_activity_status_idx" ON "activity_runs" USING btree ("activity_id","status");--> statement-breakpoint
CREATE TABLE "event_cancel_scans" (
	"event_id" text NOT NULL REFERENCES "events" ("event_id") ON DELETE CASCADE,
	"activity_id" uuid NOT NULL,
	"activity_version" integer NOT NULL,
	"activity_name" text NOT NULL,
	"examined" integer NOT NULL,
	"capped" boolean NOT NULL,
	"matched" integer NOT NULL,
	"errors" integer NOT NULL,
	"scanned_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "event_cancel_scans_event_id_activity_id_pk" PRIMARY KEY("event_id","activity_id")
);
--> statement-breakpoint
CREATE TABLE "event_cancellations" (
	"event_id" text NOT NULL REFERENCES "events" ("event_id") ON DELETE CASCADE,
	"run_id" uuid NOT NULL,
	"activity_id" uuid NOT NULL,
	"workflow_id" text NOT NULL,
	"outcome" text DEFAULT 'pending' NOT NULL,
	"detail" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "event_cancellations_event_id_run_id_pk" PRIMARY KEY("event_id","run_id"),
	CONSTRAINT "event_cancellations_outcome_ck" CHECK ("event_cancellations"."outcome" IN ('pending','cancel_requested','already_closed'))
);
