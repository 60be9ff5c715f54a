ALTER TABLE "events" ADD COLUMN "credential" text;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "hops" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_hops_ck" CHECK ("events"."hops" >= 0);
