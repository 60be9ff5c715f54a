import type { ActivityDefinition, CronTrigger } from '@activity-core/contracts';
import type { DefinitionRow, ScheduleFireRow, ScheduleStateRow } from '@activity-core/db';
import type { ScheduleDescription } from '@temporalio/client';
import { describe, expect, test } from 'vitest';
import {
  cronScheduleSummaries,
  explainFire,
  explainFires,
  explainUnrecordedFire,
  fireTimeView,
  scheduleUiUrl,
  scheduleView,
  temporalView,
  toFireRecord,
} from './schedule-views';
import { cronRunWorkflowId, temporalScheduleId } from '@activity-core/contracts/ids';

const ACTIVITY = '550e8400-e29b-41d4-a716-446655440000';
const at = (seconds: number): Date => new Date(Date.UTC(2026, 2, 1, 9, 0, seconds));
const runOf = (seconds: number): string => cronRunWorkflowId(ACTIVITY, at(seconds));

const trigger = (extra: Partial<CronTrigger> = {}): CronTrigger => ({
  type: 'cron',
  cron: '0 9 * * MON-FRI',
  timezone: 'Europe/Paris',
  misfire_policy: 'catchup',
  max_catchup: 10,
  misfire_grace: '60s',
  ...extra,
});
const everyTwoSeconds = trigger({ cron: '*/2 * * * * *', timezone: 'UTC' });

function fireRow(extra: Partial<ScheduleFireRow> = {}): ScheduleFireRow {
  return {
    activityId: ACTIVITY,
    triggerIndex: 0,
    scheduledFor: at(4),
    rangeEnd: null,
    status: 'started',
    reason: 'on_time',
    triggerType: 'cron',
    workflowId: runOf(4),
    runId: '57f4879f-e5ed-5f63-84e8-41871669e38f',
    windowStart: at(2),
    windowEnd: at(4),
    coveredBy: null,
    lateByMs: 120,
    detail: null,
    decidedAt: new Date('2026-03-01T09:00:04.120Z'),
    updatedAt: new Date('2026-03-01T09:00:04.120Z'),
    ...extra,
  };
}

function state(extra: Partial<ScheduleStateRow> = {}): ScheduleStateRow {
  return {
    activityId: ACTIVITY,
    triggerIndex: 0,
    scheduleId: temporalScheduleId(ACTIVITY, 0),
    trigger: everyTwoSeconds,
    processedThrough: at(10),
    lastWindowEnd: at(10),
    active: true,
    paused: false,
    pauseNote: null,
    pausedAt: null,
    createdAt: at(1),
    updatedAt: at(10),
    ...extra,
  };
}

const definition = (triggers: ActivityDefinition['triggers']): DefinitionRow['definition'] =>
  ({ name: 'nightly-export', triggers, tasks: [{ type: 'noop' }] }) as unknown as DefinitionRow['definition'];

describe('fire times for people', () => {
  test("a fire time shows in the canonical UTC form and on the trigger's wall clock", () => {
    expect(fireTimeView(new Date('2026-03-02T08:00:00Z'), 'Europe/Paris')).toEqual({
      utc: '2026-03-02T08:00:00+00:00',
      local: '2026-03-02T09:00:00+01:00',
    });
  });

  test('milliseconds are dropped in both forms', () => {
    expect(fireTimeView(new Date('2026-03-02T08:00:00.999Z'), 'UTC')).toEqual({
      utc: '2026-03-02T08:00:00+00:00',
      local: '2026-03-02T08:00:00+00:00',
    });
  });

  test("an activity response lists the next 5 fire times per cron trigger, in UTC and on the trigger's wall clock", () => {
    const now = new Date('2026-03-06T12:00:00Z'); // a Friday
    const [summary] = cronScheduleSummaries(
      { id: ACTIVITY, enabled: true, definition: { triggers: [trigger()] } },
      now,
    );
    expect(summary).toMatchObject({
      trigger_index: 0,
      schedule_id: temporalScheduleId(ACTIVITY, 0),
      cron: '0 9 * * MON-FRI',
      timezone: 'Europe/Paris',
      misfire_policy: 'catchup',
    });
    expect(summary?.next_fire_times).toEqual([
      { utc: '2026-03-09T08:00:00+00:00', local: '2026-03-09T09:00:00+01:00' },
      { utc: '2026-03-10T08:00:00+00:00', local: '2026-03-10T09:00:00+01:00' },
      { utc: '2026-03-11T08:00:00+00:00', local: '2026-03-11T09:00:00+01:00' },
      { utc: '2026-03-12T08:00:00+00:00', local: '2026-03-12T09:00:00+01:00' },
      { utc: '2026-03-13T08:00:00+00:00', local: '2026-03-13T09:00:00+01:00' },
    ]);
    expect(
      cronScheduleSummaries({ id: ACTIVITY, enabled: false, definition: { triggers: [trigger()] } }, now)[0]
        ?.next_fire_times,
    ).toEqual([]);
  });

  test('event triggers have no schedule; cron triggers keep their position as trigger_index', () => {
    const summaries = cronScheduleSummaries(
      { id: ACTIVITY, enabled: true, definition: { triggers: [{ type: 'event', event_type: 'a.b' }, trigger()] } },
      at(0),
    );
    expect(summaries.map((summary) => [summary.trigger_index, summary.schedule_id])).toEqual([
      [1, temporalScheduleId(ACTIVITY, 1)],
    ]);
  });
});

describe('the view of one schedule', () => {
  const base = {
    activity: { id: ACTIVITY, enabled: true },
    trigger: everyTwoSeconds,
    triggerIndex: 0,
    temporal: null,
    now: at(11),
    temporalUiUrl: 'http://ui:8233/',
    namespace: 'team a',
  };

  test("shows the trigger, Postgres' state, the next fire times and a link to the schedule in the Temporal UI", () => {
    expect(scheduleView({ ...base, state: state() })).toEqual({
      trigger_index: 0,
      schedule_id: temporalScheduleId(ACTIVITY, 0),
      cron: '*/2 * * * * *',
      timezone: 'UTC',
      misfire_policy: 'catchup',
      max_catchup: 10,
      misfire_grace: '60s',
      active: true,
      paused: false,
      pause_note: null,
      paused_at: null,
      processed_through: '2026-03-01T09:00:10.000Z',
      next_fire_times: [12, 14, 16, 18, 20].map((second) => ({
        utc: `2026-03-01T09:00:${second}+00:00`,
        local: `2026-03-01T09:00:${second}+00:00`,
      })),
      temporal: null,
      temporal_ui_url: `http://ui:8233/namespaces/team%20a/schedules/schedule-${ACTIVITY}-0`,
    });
  });

  test('a schedule paused by an operator says who and why, and lists no next fire times', () => {
    const view = scheduleView({
      ...base,
      state: state({ paused: true, pauseNote: 'vendor maintenance', pausedAt: at(5) }),
    });
    expect(view).toMatchObject({
      paused: true,
      pause_note: 'vendor maintenance',
      paused_at: '2026-03-01T09:00:05.000Z',
      next_fire_times: [],
    });
  });

  test("a disabled activity's schedule is inactive and lists no next fire times", () => {
    expect(scheduleView({ ...base, activity: { id: ACTIVITY, enabled: false }, state: state() })).toMatchObject({
      active: false,
      paused: false,
      next_fire_times: [],
    });
  });

  test('a trigger whose state was never written counts as processed through now', () => {
    expect(scheduleView({ ...base, state: undefined }).processed_through).toBe('2026-03-01T09:00:11.000Z');
  });

  test('the Temporal UI link tolerates a trailing slash and escapes the namespace and schedule id', () => {
    expect(scheduleUiUrl('http://127.0.0.1:8233', 'default', 'schedule-x-0')).toBe(
      'http://127.0.0.1:8233/namespaces/default/schedules/schedule-x-0',
    );
    expect(scheduleUiUrl('http://127.0.0.1:8233/', 'a/b', 's c')).toBe(
      'http://127.0.0.1:8233/namespaces/a%2Fb/schedules/s%20c',
    );
  });

  test("Temporal's description is shown with its counts, next times and recent actions", () => {
    const description = {
      state: { paused: true, note: 'paused by operator' },
      info: {
        numActionsTaken: 7,
        numActionsSkippedOverlap: 1,
        numActionsMissedCatchupWindow: 2,
        nextActionTimes: [at(12)],
        recentActions: [
          {
            scheduledAt: at(10),
            takenAt: new Date('2026-03-01T09:00:10.250Z'),
            action: { type: 'startWorkflow', workflow: { workflowId: 'tick-1', firstExecutionRunId: 'r' } },
          },
        ],
      },
    } as unknown as ScheduleDescription;
    expect(temporalView(description)).toEqual({
      paused: true,
      note: 'paused by operator',
      num_actions: 7,
      num_skipped_overlap: 1,
      num_missed_catchup_window: 2,
      next_action_times: ['2026-03-01T09:00:12.000Z'],
      recent_actions: [
        { scheduled_at: '2026-03-01T09:00:10.000Z', taken_at: '2026-03-01T09:00:10.250Z', workflow_id: 'tick-1' },
      ],
    });
  });
});

describe('the fire log', () => {
  test('a decision shows its fire times in the canonical form and its other instants as RFC 3339 UTC', () => {
    expect(toFireRecord(fireRow())).toEqual({
      trigger_index: 0,
      scheduled_for: '2026-03-01T09:00:04+00:00',
      range_end: null,
      status: 'started',
      reason: 'on_time',
      trigger_type: 'cron',
      workflow_id: runOf(4),
      run_id: '57f4879f-e5ed-5f63-84e8-41871669e38f',
      window_start: '2026-03-01T09:00:02.000Z',
      window_end: '2026-03-01T09:00:04.000Z',
      covered_by: null,
      late_by_ms: 120,
      detail: null,
      decided_at: '2026-03-01T09:00:04.120Z',
    });
  });

  test('a range decision shows where its range ends, in the canonical form', () => {
    const record = toFireRecord(
      fireRow({
        status: 'skipped',
        reason: 'activity_disabled',
        rangeEnd: at(8),
        workflowId: null,
        runId: null,
        windowStart: null,
        windowEnd: null,
      }),
    );
    expect(record).toMatchObject({
      scheduled_for: '2026-03-01T09:00:04+00:00',
      range_end: '2026-03-01T09:00:08+00:00',
      window_start: null,
      window_end: null,
    });
  });
});

describe('why a recorded fire time did or did not run', () => {
  test('a started run that its trigger overlap policy skipped or cancelled says so, and the fire record carries its status', () => {
    const withRun = (runStatus: string, runError: unknown, runCancelledByRun: string | null = null) => ({
      ...fireRow(),
      runStatus,
      runError,
      runCancelledByRun,
    });
    const overlapError = {
      type: 'overlap',
      policy: 'skip',
      message: `${runOf(2)} is still running; the trigger's overlap policy is skip`,
    };
    expect(explainFire(withRun('skipped', overlapError))).toBe(
      `2026-03-01T09:00:04+00:00 ran on time: ${runOf(4)}, but the run was skipped by the trigger's overlap policy: ${runOf(2)} is still running; the trigger's overlap policy is skip`,
    );
    expect(explainFire(withRun('cancelled', null, runOf(6)))).toBe(
      `2026-03-01T09:00:04+00:00 ran on time: ${runOf(4)}, but the run was cancelled: the trigger's overlap policy is cancel_other and ${runOf(6)} replaced it`,
    );
    expect(explainFire(withRun('waiting_for_slot', null))).toContain('and the run waits for a slot');
    expect(explainFire(withRun('succeeded', null))).toBe(`2026-03-01T09:00:04+00:00 ran on time: ${runOf(4)}`);
    expect(toFireRecord(withRun('skipped', overlapError))).toMatchObject({
      run_status: 'skipped',
      run_error: overlapError,
    });
    expect(toFireRecord({ ...fireRow(), runStatus: null, runError: null, runCancelledByRun: null })).toMatchObject({
      run_status: null,
      run_error: null,
    });
  });

  test('a run says how it came about and names its workflow', () => {
    expect(explainFire(fireRow())).toBe(`2026-03-01T09:00:04+00:00 ran on time: ${runOf(4)}`);
    expect(explainFire(fireRow({ reason: 'misfire_catchup' }))).toBe(
      `2026-03-01T09:00:04+00:00 ran late, caught up (misfire policy catchup): ${runOf(4)}`,
    );
    expect(explainFire(fireRow({ reason: 'misfire_compress' }))).toContain(
      'ran late, as the one run covering every missed interval (misfire policy compress)',
    );
    expect(explainFire(fireRow({ reason: 'backfill', triggerType: 'backfill' }))).toContain('ran by a backfill');
  });

  test('a run found already there says it was not started twice', () => {
    expect(explainFire(fireRow({ status: 'duplicate' }))).toBe(
      `2026-03-01T09:00:04+00:00 ran on time: ${runOf(4)} (the run already existed; it was not started twice)`,
    );
  });

  test('a pending run says its start is retried', () => {
    expect(explainFire(fireRow({ status: 'pending' }))).toBe(
      `2026-03-01T09:00:04+00:00 was decided to run (on_time); the start of ${runOf(4)} is not confirmed yet and is retried by the next tick`,
    );
  });

  test('a skip gives its reason, with the recorded detail when there is one', () => {
    const skip = (reason: string, extra: Partial<ScheduleFireRow> = {}) =>
      explainFire(fireRow({ status: 'skipped', reason, workflowId: null, ...extra }));
    expect(skip('misfire_skip')).toBe(
      '2026-03-01T09:00:04+00:00 has no run: it was missed and the misfire policy is skip',
    );
    expect(
      skip('misfire_skip', {
        detail: 'missed: could start only 8.4s after its nominal time (grace 1s); misfire policy skip',
      }),
    ).toBe(
      '2026-03-01T09:00:04+00:00 has no run: missed: could start only 8.4s after its nominal time (grace 1s); misfire policy skip',
    );
    expect(skip('catchup_limit')).toBe(
      '2026-03-01T09:00:04+00:00 has no run: more fire times were missed than max_catchup; only the most recent ran',
    );
    expect(skip('compressed', { coveredBy: runOf(8) })).toBe(
      `2026-03-01T09:00:04+00:00 has no run of its own: it was compressed into ${runOf(8)}, whose window covers it`,
    );
    expect(skip('activity_disabled')).toBe(
      '2026-03-01T09:00:04+00:00 has no run: the activity was disabled at that time',
    );
    expect(skip('trigger_changed')).toBe(
      '2026-03-01T09:00:04+00:00 has no run: the cron trigger changed before it was processed',
    );
  });

  test('decisions of several triggers for one instant are one answer', () => {
    expect(
      explainFires([
        fireRow(),
        fireRow({ triggerIndex: 1, status: 'skipped', reason: 'misfire_skip', workflowId: null }),
      ]),
    ).toBe(
      `2026-03-01T09:00:04+00:00 ran on time: ${runOf(4)}; 2026-03-01T09:00:04+00:00 has no run: it was missed and the misfire policy is skip`,
    );
  });
});

describe('why a fire time has no recorded decision', () => {
  const explain = (
    scheduledFor: Date,
    extra: {
      enabled?: boolean;
      states?: ScheduleStateRow[];
      triggers?: ActivityDefinition['triggers'];
      now?: Date;
    } = {},
  ) =>
    explainUnrecordedFire({
      activity: { enabled: extra.enabled ?? true, definition: definition(extra.triggers ?? [everyTwoSeconds]) },
      states: extra.states ?? [state()],
      scheduledFor,
      now: extra.now ?? at(11),
    });

  test('an activity without cron triggers has no fire times', () => {
    expect(explain(at(4), { triggers: [{ type: 'event', event_type: 'a.b' }] })).toBe(
      '2026-03-01T09:00:04+00:00: the activity has no cron triggers',
    );
  });

  test('a time no trigger fires at names the fire time before it', () => {
    expect(explain(at(5))).toBe(
      '2026-03-01T09:00:05+00:00 is not a fire time of any cron trigger of this activity (the one before it is 2026-03-01T09:00:04+00:00)',
    );
  });

  test('a future fire time says which trigger fires then', () => {
    expect(explain(at(20))).toBe('2026-03-01T09:00:20+00:00 is in the future: trigger 0 fires then');
  });

  test('a fire time before the schedule existed suggests a backfill', () => {
    expect(explain(at(0))).toBe(
      "2026-03-01T09:00:00+00:00 is before trigger 0's schedule existed; use a backfill to run it",
    );
    expect(explain(at(4), { states: [] })).toBe(
      "2026-03-01T09:00:04+00:00 is before trigger 0's schedule existed; use a backfill to run it",
    );
  });

  test('a fire time that passed while paused says resume decides it', () => {
    expect(explain(at(10), { states: [state({ processedThrough: at(5), paused: true })] })).toBe(
      '2026-03-01T09:00:10+00:00 passed while the schedule is paused by an operator; resume applies the misfire policy to it',
    );
  });

  test('a fire time that passed while the activity is disabled will not run', () => {
    expect(explain(at(10), { enabled: false, states: [state({ processedThrough: at(5) })] })).toBe(
      '2026-03-01T09:00:10+00:00 passed while the activity is disabled; it will not run',
    );
  });

  test('a due fire time nobody decided yet points at the workers', () => {
    expect(explain(at(10), { states: [state({ processedThrough: at(5) })] })).toBe(
      '2026-03-01T09:00:10+00:00 is due but not decided yet: no worker has processed its tick (are workers running?)',
    );
  });

  test('a processed fire time without a record predates the current trigger definition', () => {
    expect(explain(at(8))).toBe(
      '2026-03-01T09:00:08+00:00 was processed but has no recorded decision (it predates the current trigger definition)',
    );
  });
});
