CREATE TABLE "webhook_sources" (
	"name" text PRIMARY KEY NOT NULL,
	"scheme" text NOT NULL,
	"config" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "event_routes" DROP CONSTRAINT "event_routes_outcome_ck";--> statement-breakpoint
ALTER TABLE "event_routes" ADD COLUMN "detail" text;--> statement-breakpoint
ALTER TABLE "event_routes" ADD CONSTRAINT "event_routes_outcome_ck" CHECK ("event_routes"."outcome" IN ('pending','started','duplicate','filtered','filter_error'));