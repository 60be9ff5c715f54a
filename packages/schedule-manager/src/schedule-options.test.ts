import { temporalScheduleId, type CronTrigger } from '@activity-core/contracts';
import { describe, expect, test } from 'vitest';
import { catchupWindowMs, desiredSchedule, pauseCauseOf, scheduleNote } from './schedule-options';
import { scheduleIssues } from './trigger-checks';

const ACTIVITY = '550e8400-e29b-41d4-a716-446655440000';
const row = { id: ACTIVITY, name: 'nightly-export', version: 3 };
const trigger = (extra: Partial<CronTrigger> = {}): CronTrigger => ({
  type: 'cron',
  cron: '0 9 * * MON-FRI',
  timezone: 'Europe/Paris',
  misfire_policy: 'catchup',
  max_catchup: 10,
  misfire_grace: '60s',
  ...extra,
});

describe('the Temporal Schedule of a cron trigger', () => {
  test('is named after the activity and the trigger position; its ticks after the same', () => {
    const desired = desiredSchedule({
      row,
      trigger: trigger(),
      triggerIndex: 2,
      taskQueue: 'q',
      cause: { kind: 'running' },
    });
    expect(desired.scheduleId).toBe(temporalScheduleId(ACTIVITY, 2));
    expect(desired.options.scheduleId).toBe(temporalScheduleId(ACTIVITY, 2));
    expect(desired.options.action.workflowId).toBe(`schedule-tick-${ACTIVITY}-2`);
  });

  test('is paused while the activity is disabled, else while an operator paused it', () => {
    expect(pauseCauseOf({ enabled: false }, { paused: true, pauseNote: 'x' })).toEqual({ kind: 'disabled' });
    expect(pauseCauseOf({ enabled: true }, { paused: true, pauseNote: 'vendor maintenance' })).toEqual({
      kind: 'operator',
      note: 'vendor maintenance',
    });
    expect(pauseCauseOf({ enabled: true }, { paused: false, pauseNote: null })).toEqual({ kind: 'running' });
    expect(pauseCauseOf({ enabled: true }, undefined)).toEqual({ kind: 'running' });
  });

  test('fires the tick workflow on the trigger cron and timezone, buffering one tick while workers are down', () => {
    const desired = desiredSchedule({
      row,
      trigger: trigger({ jitter: '30s' }),
      triggerIndex: 0,
      taskQueue: 'q',
      cause: { kind: 'running' },
    });
    expect(desired.options.spec).toEqual({
      cronExpressions: ['0 9 * * MON-FRI'],
      timezone: 'Europe/Paris',
      jitter: 30_000,
    });
    expect(desired.options.policies).toEqual({ overlap: 'BUFFER_ONE', catchupWindow: 90_000, pauseOnFailure: false });
    expect(desired.options.action).toMatchObject({
      type: 'startWorkflow',
      workflowType: 'ScheduleTickWorkflow',
      workflowId: `schedule-tick-${ACTIVITY}-0`,
      taskQueue: 'q',
    });
    expect(desired.options.action.args).toEqual([
      { activityId: ACTIVITY, triggerIndex: 0, definitionVersion: 3, revision: desired.revision },
    ]);
    expect(desired.options.memo).toEqual({
      managedBy: 'activity-core',
      taskQueue: 'q',
      activityId: ACTIVITY,
      triggerIndex: 0,
    });
    expect(desired.paused).toBe(false);
  });

  test("a 6-field cron gets Temporal's year field so its first field stays seconds", () => {
    const desired = desiredSchedule({
      row,
      trigger: trigger({ cron: '*/2 * * * * *' }),
      triggerIndex: 0,
      taskQueue: 'q',
      cause: { kind: 'running' },
    });
    expect(desired.options.spec.cronExpressions).toEqual(['*/2 * * * * * *']);
  });

  test('the revision changes with what the schedule does, not with the definition version or the pause state', () => {
    const base = desiredSchedule({
      row,
      trigger: trigger(),
      triggerIndex: 0,
      taskQueue: 'q',
      cause: { kind: 'running' },
    }).revision;
    expect(
      desiredSchedule({
        row: { ...row, version: 9 },
        trigger: trigger(),
        triggerIndex: 0,
        taskQueue: 'q',
        cause: { kind: 'disabled' },
      }).revision,
    ).toBe(base);
    expect(
      desiredSchedule({
        row,
        trigger: trigger({ cron: '0 10 * * MON-FRI' }),
        triggerIndex: 0,
        taskQueue: 'q',
        cause: { kind: 'running' },
      }).revision,
    ).not.toBe(base);
    expect(
      desiredSchedule({
        row,
        trigger: trigger({ timezone: 'UTC' }),
        triggerIndex: 0,
        taskQueue: 'q',
        cause: { kind: 'running' },
      }).revision,
    ).not.toBe(base);
    expect(
      desiredSchedule({
        row,
        trigger: trigger({ misfire_grace: '5m' }),
        triggerIndex: 0,
        taskQueue: 'q',
        cause: { kind: 'running' },
      }).revision,
    ).not.toBe(base);
    expect(
      desiredSchedule({ row, trigger: trigger(), triggerIndex: 0, taskQueue: 'other', cause: { kind: 'running' } })
        .revision,
    ).not.toBe(base);
  });

  test("Temporal's own catch-up stays short: the grace plus jitter, never below Temporal's 10 s floor", () => {
    expect(catchupWindowMs(trigger({ misfire_grace: '1s' }))).toBe(10_000);
    expect(catchupWindowMs(trigger({ misfire_grace: '2m', jitter: '30s' }))).toBe(150_000);
  });

  test('the note says what the schedule is, or who paused it and why', () => {
    expect(scheduleNote(row, trigger(), 0, { kind: 'running' })).toBe(
      `activity-core: nightly-export · trigger 0 "0 9 * * MON-FRI" Europe/Paris · misfire catchup (max 10), grace 60s · runs activity-${ACTIVITY}:{scheduled_for}`,
    );
    expect(scheduleNote(row, trigger(), 0, { kind: 'disabled' })).toMatch(
      /^paused: activity nightly-export is disabled/,
    );
    expect(scheduleNote(row, trigger(), 0, { kind: 'operator', note: 'vendor maintenance' })).toMatch(
      /^paused by operator: vendor maintenance/,
    );
  });
});

describe('registration checks', () => {
  test("cron syntax Temporal cannot run is an issue on the trigger's cron field", () => {
    expect(
      scheduleIssues({ triggers: [{ type: 'event', event_type: 'a.b' }, trigger({ cron: '0 9 L * *' })] }),
    ).toEqual([expect.objectContaining({ path: 'triggers[1].cron', code: 'invalid_cron' })]);
    expect(scheduleIssues({ triggers: [trigger()] })).toEqual([]);
  });
});
