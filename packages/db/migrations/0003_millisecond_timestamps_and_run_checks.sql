ALTER TABLE "activity_definition_versions" ALTER COLUMN "created_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "activity_definition_versions" ALTER COLUMN "created_at" SET DEFAULT now();--> statement-breakpoint
ALTER TABLE "activity_definitions" ALTER COLUMN "created_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "activity_definitions" ALTER COLUMN "created_at" SET DEFAULT now();--> statement-breakpoint
ALTER TABLE "activity_definitions" ALTER COLUMN "updated_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "activity_definitions" ALTER COLUMN "updated_at" SET DEFAULT now();--> statement-breakpoint
ALTER TABLE "activity_definitions" ALTER COLUMN "deleted_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "activity_runs" ALTER COLUMN "scheduled_for" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "activity_runs" ALTER COLUMN "window_start" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "activity_runs" ALTER COLUMN "window_end" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "activity_runs" ALTER COLUMN "started_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "activity_runs" ALTER COLUMN "started_at" SET DEFAULT now();--> statement-breakpoint
ALTER TABLE "activity_runs" ALTER COLUMN "finished_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "activity_runs" ALTER COLUMN "created_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "activity_runs" ALTER COLUMN "created_at" SET DEFAULT now();--> statement-breakpoint
ALTER TABLE "activity_runs" ALTER COLUMN "updated_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "activity_runs" ALTER COLUMN "updated_at" SET DEFAULT now();--> statement-breakpoint
ALTER TABLE "event_routes" ALTER COLUMN "created_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "event_routes" ALTER COLUMN "created_at" SET DEFAULT now();--> statement-breakpoint
ALTER TABLE "event_routes" ALTER COLUMN "updated_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "event_routes" ALTER COLUMN "updated_at" SET DEFAULT now();--> statement-breakpoint
ALTER TABLE "events" ALTER COLUMN "occurred_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "events" ALTER COLUMN "received_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "events" ALTER COLUMN "received_at" SET DEFAULT now();--> statement-breakpoint
ALTER TABLE "events" ALTER COLUMN "next_attempt_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "events" ALTER COLUMN "next_attempt_at" SET DEFAULT now();--> statement-breakpoint
ALTER TABLE "events" ALTER COLUMN "routed_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "schedule_fires" ALTER COLUMN "scheduled_for" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "schedule_fires" ALTER COLUMN "range_end" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "schedule_fires" ALTER COLUMN "window_start" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "schedule_fires" ALTER COLUMN "window_end" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "schedule_fires" ALTER COLUMN "decided_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "schedule_fires" ALTER COLUMN "decided_at" SET DEFAULT now();--> statement-breakpoint
ALTER TABLE "schedule_fires" ALTER COLUMN "updated_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "schedule_fires" ALTER COLUMN "updated_at" SET DEFAULT now();--> statement-breakpoint
ALTER TABLE "schedule_states" ALTER COLUMN "processed_through" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "schedule_states" ALTER COLUMN "last_window_end" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "schedule_states" ALTER COLUMN "paused_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "schedule_states" ALTER COLUMN "created_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "schedule_states" ALTER COLUMN "created_at" SET DEFAULT now();--> statement-breakpoint
ALTER TABLE "schedule_states" ALTER COLUMN "updated_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "schedule_states" ALTER COLUMN "updated_at" SET DEFAULT now();--> statement-breakpoint
ALTER TABLE "task_instances" ALTER COLUMN "started_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "task_instances" ALTER COLUMN "finished_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "task_instances" ALTER COLUMN "created_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "task_instances" ALTER COLUMN "created_at" SET DEFAULT now();--> statement-breakpoint
ALTER TABLE "task_instances" ALTER COLUMN "updated_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "task_instances" ALTER COLUMN "updated_at" SET DEFAULT now();--> statement-breakpoint
ALTER TABLE "webhook_sources" ALTER COLUMN "created_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "webhook_sources" ALTER COLUMN "created_at" SET DEFAULT now();--> statement-breakpoint
ALTER TABLE "webhook_sources" ALTER COLUMN "updated_at" SET DATA TYPE timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "webhook_sources" ALTER COLUMN "updated_at" SET DEFAULT now();--> statement-breakpoint
ALTER TABLE "activity_runs" ADD COLUMN "checked_at" timestamp (3) with time zone;--> statement-breakpoint
CREATE INDEX "activity_runs_running_checked_idx" ON "activity_runs" USING btree ("checked_at") WHERE "activity_runs"."status" = 'running';