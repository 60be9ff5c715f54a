-- Dead letters (ADR 0072, docs/recovery.md): a route whose run cannot be started is settled `dead_letter` with a reason
-- instead of staying pending; it is listed until an operator retries or discards it.
ALTER TABLE "event_routes" ADD COLUMN "reason_code" text;
--> statement-breakpoint
ALTER TABLE "event_routes" ADD COLUMN "dead_letter_count" integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
ALTER TABLE "event_routes" ADD COLUMN "dead_lettered_at" timestamp (3) with time zone;
--> statement-breakpoint
ALTER TABLE "event_routes" ADD COLUMN "discarded_at" timestamp (3) with time zone;
--> statement-breakpoint
ALTER TABLE "event_routes" ADD COLUMN "discarded_by" text;
--> statement-breakpoint
ALTER TABLE "event_routes" DROP CONSTRAINT "event_routes_outcome_ck";
--> statement-breakpoint
ALTER TABLE "event_routes" ADD CONSTRAINT "event_routes_outcome_ck" CHECK ("outcome" IN ('pending','started','duplicate','filtered','filter_error','dropped','coalescing','merged','batched','held','discarded','expired','dead_letter'));
--> statement-breakpoint
ALTER TABLE "event_routes" ADD CONSTRAINT "event_routes_reason_code_ck" CHECK (("outcome" = 'dead_letter') = ("reason_code" IS NOT NULL) AND "reason_code" IN ('definition_deleted','start_refused','retry_budget_exhausted','not_matched'));
--> statement-breakpoint
CREATE INDEX "event_routes_dead_letters_idx" ON "event_routes" ("activity_id") WHERE "outcome" IN ('dead_letter','filter_error') AND "discarded_at" IS NULL;
