-- Pacing (ADR 0067): one GCRA bucket per (activity, policy, key), shared by every API process through its row lock;
-- an event route keeps the pacing decision taken for it (delayed until not_before, or dropped) so a redispatch reuses it.
CREATE TABLE "pacing_buckets" (
	"activity_id" uuid NOT NULL,
	"policy" text NOT NULL,
	"key" text NOT NULL,
	"tat" timestamp with time zone NOT NULL,
	CONSTRAINT "pacing_buckets_pk" PRIMARY KEY ("activity_id","policy","key"),
	CONSTRAINT "pacing_buckets_policy_ck" CHECK ("policy" IN ('throttle','rate_limit')),
	CONSTRAINT "pacing_buckets_key_ck" CHECK (char_length("key") <= 500)
);
--> statement-breakpoint
CREATE INDEX "pacing_buckets_tat_idx" ON "pacing_buckets" ("tat");
--> statement-breakpoint
ALTER TABLE "event_routes" ADD COLUMN "paced_at" timestamp (3) with time zone;
--> statement-breakpoint
ALTER TABLE "event_routes" ADD COLUMN "not_before" timestamp (3) with time zone;
--> statement-breakpoint
ALTER TABLE "event_routes" DROP CONSTRAINT "event_routes_outcome_ck";
--> statement-breakpoint
ALTER TABLE "event_routes" ADD CONSTRAINT "event_routes_outcome_ck" CHECK ("outcome" IN ('pending','started','duplicate','filtered','filter_error','dropped','coalescing','merged'));
