-- A fire time's lateness in milliseconds outgrew a 32-bit integer after 24.8 days: a backfill of fire times older
-- than that failed on insert (a 500). bigint holds any lateness. The type change rewrites schedule_fires once.
ALTER TABLE "schedule_fires" ALTER COLUMN "late_by_ms" TYPE bigint;
