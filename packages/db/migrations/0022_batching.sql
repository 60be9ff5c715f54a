-- Batching (docs/coalescing.md "Batching", ADR 0070): a batch is a coalescing window of kind 'batch'. A member's route
-- keeps its 1-based position in its window (arrival order: the order of the run's `events`), and a closed batch's
-- members are recorded 'batched' into the batch's run.
ALTER TABLE "coalesce_windows" DROP CONSTRAINT "coalesce_windows_kind_ck";
--> statement-breakpoint
ALTER TABLE "coalesce_windows" ADD CONSTRAINT "coalesce_windows_kind_ck" CHECK ("kind" IN ('debounce','batch'));
--> statement-breakpoint
ALTER TABLE "event_routes" ADD COLUMN "window_position" integer;
--> statement-breakpoint
ALTER TABLE "event_routes" DROP CONSTRAINT "event_routes_outcome_ck";
--> statement-breakpoint
ALTER TABLE "event_routes" ADD CONSTRAINT "event_routes_outcome_ck" CHECK ("outcome" IN ('pending','started','duplicate','filtered','filter_error','dropped','coalescing','merged','batched'));
