/**
 * The schedule manager (ADR 0010): one Temporal Schedule per cron trigger,
 * kept in step with Postgres, the ticks that decide and start cron runs, the
 * operator commands (pause, resume, trigger now, backfill) and the "why did /
 * didn't this run" answers.
 *
 * A facade over parts with one job each:
 * - `schedule-sync.ts` keeps Temporal Schedules in step with Postgres;
 * - `schedule-ticks.ts` (with `fire-processor.ts` and the pure
 *   `fire-plan.ts`) decides fire times and starts their runs;
 * - `schedule-commands.ts` carries out operator commands (a backfill's plan
 *   is the pure `backfill-plan.ts`);
 * - `schedule-queries.ts` reads what the pure `schedule-views.ts` renders.
 */
import { createFireProcessor } from './fire-processor';
import { createScheduleCommands } from './schedule-commands';
import type { ScheduleManagerDeps } from './schedule-deps';
import { createScheduleQueries } from './schedule-queries';
import { createScheduleSync } from './schedule-sync';
import { createScheduleTicks } from './schedule-ticks';

export type { ScheduleManagerDeps } from './schedule-deps';
export type { ReconcileOptions, SyncOutcome } from './schedule-sync';

export function createScheduleManager(deps: ScheduleManagerDeps) {
  const sync = createScheduleSync(deps);
  const queries = createScheduleQueries(deps);
  const commands = createScheduleCommands(deps, { sync, queries });
  // Fire decisions take Postgres' clock (the schedules repository's databaseNow) unless deps.clock is set (tests).
  const ticks = createScheduleTicks({
    schedules: deps.schedules,
    logger: deps.logger,
    processor: createFireProcessor(deps),
    sync,
    ...(deps.clock === undefined ? {} : { clock: deps.clock }),
  });

  return {
    /** Creates, updates (or pauses) and deletes the schedules of one live activity to match its definition. */
    sync: sync.sync,
    /** An activity was deleted: its schedules and schedule states go; runs and fire history stay. */
    remove: sync.remove,
    /** Makes Temporal match Postgres for every activity; idempotent. `{ compareWith: 'listing' }` for periodic sweeps (ADR 0042). */
    reconcile: sync.reconcile,

    /** The tick activity: decide and start what is due; an orphaned tick removes its schedule. */
    processTick: ticks.processTick,
    /** Decides what is due for every running trigger (the workers' sweep). */
    processAllDue: ticks.processAllDue,

    describe: queries.describe,
    /** Fire decisions of an activity, newest first. */
    fires: queries.fires,
    /** "Why did / didn't this nominal time run?" */
    explain: queries.explain,

    pause: commands.pause,
    resume: commands.resume,
    triggerNow: commands.triggerNow,
    backfill: commands.backfill,
  };
}

export type ScheduleManager = ReturnType<typeof createScheduleManager>;
