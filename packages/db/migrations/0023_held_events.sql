-- Held events (ADR 0071): an event matching an activity disabled with when_disabled.action = hold is routed `held`
-- until `expires_at`, then released (pending, and routed as usual), `discarded` by an operator or `expired` by the
-- sweep. A route that was ever held keeps its `expires_at`, so released/discarded/expired counts read from it.
ALTER TABLE "event_routes" ADD COLUMN "expires_at" timestamp (3) with time zone;
--> statement-breakpoint
ALTER TABLE "event_routes" DROP CONSTRAINT "event_routes_outcome_ck";
--> statement-breakpoint
ALTER TABLE "event_routes" ADD CONSTRAINT "event_routes_outcome_ck" CHECK ("outcome" IN ('pending','started','duplicate','filtered','filter_error','dropped','coalescing','merged','batched','held','discarded','expired'));
--> statement-breakpoint
CREATE INDEX "event_routes_held_idx" ON "event_routes" ("activity_id","created_at","event_id") WHERE "outcome" = 'held';
--> statement-breakpoint
CREATE INDEX "event_routes_held_expiry_idx" ON "event_routes" ("expires_at") WHERE "outcome" = 'held';
--> statement-breakpoint
CREATE INDEX "event_routes_ever_held_idx" ON "event_routes" ("activity_id","outcome") WHERE "expires_at" IS NOT NULL;
