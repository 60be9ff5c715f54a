import { cronRunWorkflowId, temporalScheduleId, type CronTrigger } from '@activity-core/contracts';
import type {
  DefinitionRow,
  NewScheduleFire,
  ScheduleStatePatch,
  ScheduleStateRow,
  SchedulesRepository,
} from '@activity-core/db';
import type { RunStarter } from '@activity-core/temporal/client';
import { describe, expect, test } from 'vitest';
import { createFireProcessor } from './fire-processor';

const ACTIVITY = '550e8400-e29b-41d4-a716-446655440000';
const at = (seconds: number, ms = 0): Date => new Date(Date.UTC(2026, 2, 1, 9, 0, seconds, ms));
const silent = { debug() {}, info() {}, warn() {}, error() {} };

/**
 * One trigger's state and fire log in memory, behind the repository calls the
 * processor makes; the clock is the test's.
 */
function pausedTrigger(policy: CronTrigger['misfire_policy']) {
  const trigger: CronTrigger = {
    type: 'cron',
    cron: '*/2 * * * * *',
    timezone: 'UTC',
    misfire_policy: policy,
    max_catchup: 2,
    misfire_grace: '1s',
  };
  // The last run before the pause was the 02 s fire.
  let state: ScheduleStateRow = {
    activityId: ACTIVITY,
    triggerIndex: 0,
    scheduleId: temporalScheduleId(ACTIVITY, 0),
    trigger,
    processedThrough: at(2, 100),
    lastWindowEnd: at(2),
    active: true,
    paused: true,
    pauseNote: 'maintenance',
    pausedAt: at(3),
    createdAt: at(0),
    updatedAt: at(0),
  };
  const definition = {
    id: ACTIVITY,
    name: 'paused',
    version: 1,
    enabled: true,
    definition: { name: 'paused', triggers: [trigger], tasks: [{ type: 'noop' }] },
    createdAt: at(0),
    updatedAt: at(0),
    deletedAt: null,
  } as unknown as DefinitionRow;
  const fires: NewScheduleFire[] = [];
  const started: Array<{ workflowId: string; windowStart: string; windowEnd: string }> = [];
  const queries = {
    lockState: async () => state,
    getLiveDefinition: async () => definition,
    updateState: async (_activityId: string, _index: number, patch: ScheduleStatePatch) => {
      state = { ...state, ...patch };
    },
    insertFires: async (rows: NewScheduleFire[]) => {
      fires.push(...rows);
      return rows.length;
    },
  };
  const schedules = {
    transaction: async <T>(fn: (tx: typeof queries) => Promise<T>) => await fn(queries),
    listPendingFires: async () => fires.filter((fire) => fire.status === 'pending'),
    completeFire: async (_activityId: string, _index: number, scheduledFor: Date, status: 'started' | 'duplicate') => {
      const fire = fires.find((row) => row.scheduledFor.getTime() === scheduledFor.getTime());
      if (fire !== undefined) fire.status = status;
    },
  } as unknown as SchedulesRepository;
  const starter = {
    start: async (input: { workflowId: string; trigger: { window_start: string; window_end: string } }) => {
      started.push({
        workflowId: input.workflowId,
        windowStart: input.trigger.window_start,
        windowEnd: input.trigger.window_end,
      });
      return 'started' as const;
    },
  } as unknown as RunStarter;
  let now = at(4, 300);
  const processor = createFireProcessor({ schedules, starter, logger: silent, clock: () => now });
  return {
    processor,
    fires,
    started,
    state: () => state,
    setNow: (date: Date) => (now = date),
    resume: () => (state = { ...state, paused: false, pauseNote: null, pausedAt: null }),
  };
}

const summary = (fires: Array<{ scheduledFor: Date; status: string; reason: string }>) =>
  fires.map((fire) => [fire.scheduledFor.getUTCSeconds(), fire.status, fire.reason]);

describe('a paused trigger, with the clock injected', () => {
  test('a tick that arrives while paused decides nothing, starts nothing and leaves processed-through where it was', async () => {
    const trigger = pausedTrigger('compress');
    const result = await trigger.processor.processDue({
      activityId: ACTIVITY,
      triggerIndex: 0,
      tickScheduledFor: at(4),
      origin: 'tick',
    });
    expect(result).toEqual({ status: 'paused', runs: [], skipped: {} });
    expect(trigger.fires).toEqual([]);
    expect(trigger.started).toEqual([]);
    expect(trigger.state().processedThrough).toEqual(at(2, 100));
  });

  test('the resume decides the fire times that passed while paused by the policy and starts what it decided (compress)', async () => {
    const trigger = pausedTrigger('compress');
    trigger.setNow(at(9, 200));
    trigger.resume();
    const result = await trigger.processor.processDue({ activityId: ACTIVITY, triggerIndex: 0, origin: 'resume' });
    expect(result.status).toBe('processed');
    expect(summary(trigger.fires)).toEqual([
      [4, 'skipped', 'compressed'],
      [6, 'skipped', 'compressed'],
      [8, 'started', 'misfire_compress'],
    ]);
    expect(trigger.started).toEqual([
      {
        workflowId: cronRunWorkflowId(ACTIVITY, at(8)),
        windowStart: '2026-03-01T09:00:02+00:00',
        windowEnd: '2026-03-01T09:00:08+00:00',
      },
    ]);
    expect(result.skipped).toEqual({ compressed: 2 });
    expect(trigger.state().processedThrough).toEqual(at(9, 200));
    expect(trigger.state().lastWindowEnd).toEqual(at(8));
  });

  test('the resume under catchup runs the max_catchup most recent paused times, each in its own window', async () => {
    const trigger = pausedTrigger('catchup');
    trigger.setNow(at(9, 200));
    trigger.resume();
    await trigger.processor.processDue({ activityId: ACTIVITY, triggerIndex: 0, origin: 'resume' });
    expect(summary(trigger.fires)).toEqual([
      [4, 'skipped', 'catchup_limit'],
      [6, 'started', 'misfire_catchup'],
      [8, 'started', 'misfire_catchup'],
    ]);
    expect(trigger.started.map((run) => [run.windowStart.slice(17, 19), run.windowEnd.slice(17, 19)])).toEqual([
      ['04', '06'],
      ['06', '08'],
    ]);
  });

  test('the resume under skip records every paused time as misfire_skip and starts nothing', async () => {
    const trigger = pausedTrigger('skip');
    trigger.setNow(at(9, 200));
    trigger.resume();
    const result = await trigger.processor.processDue({ activityId: ACTIVITY, triggerIndex: 0, origin: 'resume' });
    expect(summary(trigger.fires)).toEqual([
      [4, 'skipped', 'misfire_skip'],
      [6, 'skipped', 'misfire_skip'],
      [8, 'skipped', 'misfire_skip'],
    ]);
    expect(trigger.started).toEqual([]);
    expect(result).toMatchObject({ status: 'processed', runs: [], skipped: { misfire_skip: 3 } });
  });
});
