ALTER TABLE "activity_runs" ADD COLUMN "cancelled_by_run" text;
