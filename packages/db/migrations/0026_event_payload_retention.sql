-- Event payload retention (EVENT_PAYLOAD_RETENTION_DAYS, docs/recovery.md): the purger clears an old event's data
-- and records when; the id, fingerprint and decision log stay. The partial index finds the events still holding data.
ALTER TABLE "events" ADD COLUMN "payload_expired_at" timestamp (3) with time zone;
--> statement-breakpoint
CREATE INDEX "events_payload_kept_idx" ON "events" ("received_at") WHERE "payload_expired_at" IS NULL;
