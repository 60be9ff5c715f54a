ALTER TABLE "activity_definition_versions" ADD COLUMN "changed_by" text;--> statement-breakpoint
ALTER TABLE "activity_definitions" ADD COLUMN "deleted_by" text;
