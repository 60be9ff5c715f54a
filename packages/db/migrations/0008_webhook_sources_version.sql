CREATE TABLE "webhook_sources_version" (
	"id" integer PRIMARY KEY NOT NULL,
	"version" bigint NOT NULL,
	CONSTRAINT "webhook_sources_version_single_row_ck" CHECK ("webhook_sources_version"."id" = 1)
);
--> statement-breakpoint
INSERT INTO "webhook_sources_version" ("id", "version") VALUES (1, 1);--> statement-breakpoint
CREATE FUNCTION "webhook_sources_version_bump"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE "webhook_sources_version" SET "version" = "version" + 1 WHERE "id" = 1;
	RETURN NULL;
END;
$$;--> statement-breakpoint
CREATE TRIGGER "webhook_sources_bump_version" AFTER INSERT OR UPDATE OR DELETE ON "webhook_sources" FOR EACH STATEMENT EXECUTE FUNCTION "webhook_sources_version_bump"();--> statement-breakpoint
CREATE TRIGGER "webhook_sources_bump_version_on_truncate" AFTER TRUNCATE ON "webhook_sources" FOR EACH STATEMENT EXECUTE FUNCTION "webhook_sources_version_bump"();
