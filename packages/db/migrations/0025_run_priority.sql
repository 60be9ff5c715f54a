-- Priority on the record (ADR 0073): a run records the Temporal priority it was started with (1 highest … 5 lowest)
-- and its fairness key (at most 64 bytes, Temporal's limit); both null for runs recorded before this migration. A re-run and a bulk re-run keep the priority their request named
-- (null: the default, one lower than the definition's), so a repeated request starts the re-run with the same one.
ALTER TABLE "activity_runs" ADD COLUMN "priority" smallint;
--> statement-breakpoint
ALTER TABLE "activity_runs" ADD CONSTRAINT "activity_runs_priority_ck" CHECK ("priority" BETWEEN 1 AND 5);
--> statement-breakpoint
ALTER TABLE "activity_runs" ADD COLUMN "fairness_key" text;
--> statement-breakpoint
ALTER TABLE "activity_runs" ADD CONSTRAINT "activity_runs_fairness_key_ck" CHECK (octet_length("fairness_key") <= 64);
--> statement-breakpoint
ALTER TABLE "run_reruns" ADD COLUMN "priority" smallint;
--> statement-breakpoint
ALTER TABLE "run_reruns" ADD CONSTRAINT "run_reruns_priority_ck" CHECK ("priority" BETWEEN 1 AND 5);
--> statement-breakpoint
ALTER TABLE "bulk_reruns" ADD COLUMN "priority" smallint;
--> statement-breakpoint
ALTER TABLE "bulk_reruns" ADD CONSTRAINT "bulk_reruns_priority_ck" CHECK ("priority" BETWEEN 1 AND 5);
