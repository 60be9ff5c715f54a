ALTER TABLE "activity_runs" DROP CONSTRAINT "activity_runs_status_ck";--> statement-breakpoint
ALTER TABLE "activity_runs" ADD CONSTRAINT "activity_runs_status_ck" CHECK ("activity_runs"."status" IN ('running','waiting_for_slot','succeeded','failed','cancelled','skipped'));
