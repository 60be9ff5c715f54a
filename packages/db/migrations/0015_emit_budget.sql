CREATE TABLE "emit_budgets" (
	"root_source" text NOT NULL,
	"root_event_id" text NOT NULL,
	"emitted" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "emit_budgets_root_source_root_event_id_pk" PRIMARY KEY("root_source","root_event_id"),
	CONSTRAINT "emit_budgets_emitted_ck" CHECK ("emit_budgets"."emitted" >= 0)
);
--> statement-breakpoint
CREATE TABLE "emitted_event_roots" (
	"event_id" text PRIMARY KEY NOT NULL,
	"root_source" text NOT NULL,
	"root_event_id" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
