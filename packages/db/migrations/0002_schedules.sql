CREATE TABLE "schedule_fires" (
	"activity_id" uuid NOT NULL,
	"trigger_index" integer NOT NULL,
	"scheduled_for" timestamp with time zone NOT NULL,
	"range_end" timestamp with time zone,
	"status" text NOT NULL,
	"reason" text NOT NULL,
	"trigger_type" text,
	"workflow_id" text,
	"run_id" uuid,
	"window_start" timestamp with time zone,
	"window_end" timestamp with time zone,
	"covered_by" text,
	"late_by_ms" integer,
	"detail" text,
	"decided_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "schedule_fires_activity_id_trigger_index_scheduled_for_pk" PRIMARY KEY("activity_id","trigger_index","scheduled_for"),
	CONSTRAINT "schedule_fires_status_ck" CHECK ("schedule_fires"."status" IN ('pending','started','duplicate','skipped')),
	CONSTRAINT "schedule_fires_reason_ck" CHECK ("schedule_fires"."reason" IN ('on_time','misfire_catchup','misfire_compress','backfill','misfire_skip','catchup_limit','compressed','activity_disabled','trigger_changed')),
	CONSTRAINT "schedule_fires_trigger_type_ck" CHECK ("schedule_fires"."trigger_type" IS NULL OR "schedule_fires"."trigger_type" IN ('cron','backfill'))
);
--> statement-breakpoint
CREATE TABLE "schedule_states" (
	"activity_id" uuid NOT NULL,
	"trigger_index" integer NOT NULL,
	"schedule_id" text NOT NULL,
	"trigger" jsonb NOT NULL,
	"processed_through" timestamp with time zone NOT NULL,
	"last_window_end" timestamp with time zone,
	"active" boolean NOT NULL,
	"paused" boolean DEFAULT false NOT NULL,
	"pause_note" text,
	"paused_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "schedule_states_activity_id_trigger_index_pk" PRIMARY KEY("activity_id","trigger_index")
);
--> statement-breakpoint
CREATE INDEX "schedule_fires_activity_time_idx" ON "schedule_fires" USING btree ("activity_id","scheduled_for");--> statement-breakpoint
CREATE INDEX "schedule_fires_pending_idx" ON "schedule_fires" USING btree ("activity_id","trigger_index") WHERE "schedule_fires"."status" = 'pending';--> statement-breakpoint
CREATE UNIQUE INDEX "schedule_states_schedule_id_uq" ON "schedule_states" USING btree ("schedule_id");