CREATE TABLE "webhook_deliveries" (
	"source" text NOT NULL,
	"body_sha256" text NOT NULL,
	"event_id" text NOT NULL,
	"received_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "webhook_deliveries_source_body_sha256_pk" PRIMARY KEY("source","body_sha256"),
	CONSTRAINT "webhook_deliveries_body_sha256_ck" CHECK ("webhook_deliveries"."body_sha256" ~ '^[0-9a-f]{64}$')
);
--> statement-breakpoint
CREATE INDEX "webhook_deliveries_event_idx" ON "webhook_deliveries" USING btree ("event_id");--> statement-breakpoint
CREATE FUNCTION "webhook_deliveries_forget_event"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM "webhook_deliveries" WHERE "event_id" = OLD."event_id";
	RETURN OLD;
END;
$$;--> statement-breakpoint
CREATE TRIGGER "events_forget_webhook_deliveries" AFTER DELETE ON "events" FOR EACH ROW EXECUTE FUNCTION "webhook_deliveries_forget_event"();
