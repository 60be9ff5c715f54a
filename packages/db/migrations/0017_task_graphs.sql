-- Task graphs: a task may be skipped (its condition was false, or its trigger rule did not allow it),
-- with the reason recorded; a for_each task has one row per item; rows carry the task's key.
ALTER TABLE "task_instances" DROP CONSTRAINT "task_instances_status_ck";
--> statement-breakpoint
ALTER TABLE "task_instances" ADD CONSTRAINT "task_instances_status_ck" CHECK ("status" IN ('running','succeeded','failed','cancelled','skipped'));
--> statement-breakpoint
ALTER TABLE "task_instances" ADD COLUMN "task_key" text;
--> statement-breakpoint
ALTER TABLE "task_instances" ADD COLUMN "item_index" integer;
--> statement-breakpoint
ALTER TABLE "task_instances" ADD COLUMN "detail" jsonb;
--> statement-breakpoint
DROP INDEX "task_instances_run_index_uq";
--> statement-breakpoint
CREATE UNIQUE INDEX "task_instances_run_index_uq" ON "task_instances" ("run_id","task_index",(coalesce("item_index", -1)));
--> statement-breakpoint
-- run_activity tasks: a run started by another run's task records that run and has trigger type `call`.
ALTER TABLE "activity_runs" ADD COLUMN "parent_run_id" uuid;
--> statement-breakpoint
ALTER TABLE "activity_runs" DROP CONSTRAINT "activity_runs_trigger_ck";
--> statement-breakpoint
ALTER TABLE "activity_runs" ADD CONSTRAINT "activity_runs_trigger_ck" CHECK ("trigger_type" IN ('event','cron','manual','backfill','call'));
--> statement-breakpoint
CREATE INDEX "activity_runs_parent_run_id_idx" ON "activity_runs" ("parent_run_id") WHERE "parent_run_id" IS NOT NULL;
