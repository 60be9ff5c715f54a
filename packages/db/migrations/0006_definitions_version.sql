CREATE TABLE "definitions_version" (
	"id" integer PRIMARY KEY NOT NULL,
	"version" bigint NOT NULL,
	CONSTRAINT "definitions_version_single_row_ck" CHECK ("definitions_version"."id" = 1)
);
--> statement-breakpoint
INSERT INTO "definitions_version" ("id", "version") VALUES (1, 1);--> statement-breakpoint
CREATE FUNCTION "definitions_version_bump"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE "definitions_version" SET "version" = "version" + 1 WHERE "id" = 1;
	RETURN NULL;
END;
$$;--> statement-breakpoint
CREATE TRIGGER "activity_definitions_bump_version" AFTER INSERT OR UPDATE OR DELETE ON "activity_definitions" FOR EACH STATEMENT EXECUTE FUNCTION "definitions_version_bump"();--> statement-breakpoint
CREATE TRIGGER "activity_definitions_bump_version_on_truncate" AFTER TRUNCATE ON "activity_definitions" FOR EACH STATEMENT EXECUTE FUNCTION "definitions_version_bump"();
