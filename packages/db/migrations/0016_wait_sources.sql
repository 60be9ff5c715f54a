ALTER TABLE "event_waits" ADD COLUMN "sources" text[];
