-- Coalescing (docs/coalescing.md, ADR 0066): an open debounce window per (activity, key) holds the membership
-- of a burst of events; its Temporal workflow holds the timer. A route names the window its event joined.
CREATE TABLE "coalesce_windows" (
	"id" uuid PRIMARY KEY NOT NULL,
	"activity_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"mode" text DEFAULT 'trailing' NOT NULL,
	"key" text NOT NULL,
	"state" text DEFAULT 'open' NOT NULL,
	"workflow_id" text NOT NULL,
	"period_ms" integer NOT NULL,
	"opened_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"last_event_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"due_at" timestamp (3) with time zone NOT NULL,
	"deadline_at" timestamp (3) with time zone NOT NULL,
	"member_count" integer DEFAULT 1 NOT NULL,
	"member_bytes" bigint DEFAULT 0 NOT NULL,
	"first_event_id" text NOT NULL,
	"last_event_id" text NOT NULL,
	"last_activity_version" integer NOT NULL,
	"run_workflow_id" text,
	"closed_at" timestamp (3) with time zone,
	CONSTRAINT "coalesce_windows_kind_ck" CHECK ("kind" IN ('debounce')),
	CONSTRAINT "coalesce_windows_state_ck" CHECK ("state" IN ('open','closed')),
	CONSTRAINT "coalesce_windows_mode_ck" CHECK ("mode" IN ('trailing','leading')),
	CONSTRAINT "coalesce_windows_closed_ck" CHECK ("state" = 'open' OR "run_workflow_id" IS NOT NULL)
);
--> statement-breakpoint
CREATE UNIQUE INDEX "coalesce_windows_open_key_uq" ON "coalesce_windows" ("activity_id","key") WHERE "state" = 'open';
--> statement-breakpoint
ALTER TABLE "event_routes" ADD COLUMN "window_id" uuid;
--> statement-breakpoint
CREATE INDEX "event_routes_window_idx" ON "event_routes" ("window_id") WHERE "window_id" IS NOT NULL;
--> statement-breakpoint
ALTER TABLE "event_routes" DROP CONSTRAINT "event_routes_outcome_ck";
--> statement-breakpoint
ALTER TABLE "event_routes" ADD CONSTRAINT "event_routes_outcome_ck" CHECK ("outcome" IN ('pending','started','duplicate','filtered','filter_error','coalescing','merged'));
