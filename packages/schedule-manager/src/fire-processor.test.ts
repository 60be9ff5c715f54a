import { cronRunWorkflowId, temporalScheduleId, type CronTrigger } from '@activity-core/contracts';
import type { ScheduleStateRow } from '@activity-core/db';
import { describe, expect, test } from 'vitest';
import { planFires } from './fire-plan';
import { applyDefinitionToState, sameFireTimes, toFireRows } from './fire-processor';

const ACTIVITY = '550e8400-e29b-41d4-a716-446655440000';
const at = (seconds: number): Date => new Date(Date.UTC(2026, 2, 1, 9, 0, seconds));
const trigger = (extra: Partial<CronTrigger> = {}): CronTrigger => ({
  type: 'cron',
  cron: '*/2 * * * * *',
  timezone: 'UTC',
  misfire_policy: 'compress',
  max_catchup: 10,
  misfire_grace: '1s',
  ...extra,
});
const state = (extra: Partial<ScheduleStateRow> = {}): ScheduleStateRow => ({
  activityId: ACTIVITY,
  triggerIndex: 0,
  scheduleId: temporalScheduleId(ACTIVITY, 0),
  trigger: trigger(),
  processedThrough: at(2),
  lastWindowEnd: at(2),
  active: true,
  paused: false,
  pauseNote: null,
  pausedAt: null,
  createdAt: at(0),
  updatedAt: at(0),
  ...extra,
});

describe('a definition change applied to a trigger state', () => {
  test('nothing that matters changed: no patch, no records', () => {
    expect(applyDefinitionToState(state(), true, trigger(), at(9))).toMatchObject({ patch: {}, fires: [] });
  });

  test('whitespace in the cron does not count as a change of fire times', () => {
    expect(
      sameFireTimes({ cron: '*/2  * * * * *', timezone: 'UTC' }, { cron: ' */2 * * * * * ', timezone: 'UTC' }),
    ).toBe(true);
  });

  test('a new policy is stored without touching processed-through', () => {
    const { patch, fires } = applyDefinitionToState(state(), true, trigger({ misfire_policy: 'skip' }), at(9));
    expect(patch).toEqual({ trigger: trigger({ misfire_policy: 'skip' }) });
    expect(fires).toEqual([]);
  });

  test('a new cron records the unprocessed old fire times as trigger_changed and starts deciding from now', () => {
    const { patch, fires } = applyDefinitionToState(state(), true, trigger({ cron: '*/5 * * * * *' }), at(9));
    expect(patch).toMatchObject({ processedThrough: at(9), lastWindowEnd: null });
    expect(fires).toEqual([
      expect.objectContaining({ scheduledFor: at(4), rangeEnd: at(8), status: 'skipped', reason: 'trigger_changed' }),
    ]);
  });

  test('re-enabling records the disabled period as one activity_disabled range and does not catch it up', () => {
    const { patch, fires } = applyDefinitionToState(state({ active: false }), true, trigger(), at(9));
    expect(patch).toEqual({ active: true, processedThrough: at(9), lastWindowEnd: null });
    expect(fires).toEqual([
      expect.objectContaining({ scheduledFor: at(4), rangeEnd: at(8), reason: 'activity_disabled' }),
    ]);
  });

  test('disabling only marks the state inactive', () => {
    expect(applyDefinitionToState(state(), false, trigger(), at(9))).toMatchObject({
      patch: { active: false },
      fires: [],
    });
  });
});

describe('fire records', () => {
  test('a run decision is pending with its deterministic ids and window; a compressed skip names the run covering it', () => {
    const plan = planFires({ trigger: trigger(), processedThrough: at(2), lastWindowEnd: at(2), now: at(8) });
    const rows = toFireRows(ACTIVITY, 0, trigger(), plan.fires);
    const compressedRun = cronRunWorkflowId(ACTIVITY, at(6));
    expect(rows.map((row) => [row.scheduledFor.getUTCSeconds(), row.status, row.reason])).toEqual([
      [4, 'skipped', 'compressed'],
      [6, 'pending', 'misfire_compress'],
      [8, 'pending', 'on_time'],
    ]);
    expect(rows[0]).toMatchObject({ coveredBy: compressedRun });
    expect(rows[0]?.workflowId).toBeUndefined();
    expect(rows[0]?.detail).toContain('misfire policy compress');
    expect(rows[1]).toMatchObject({
      workflowId: compressedRun,
      triggerType: 'cron',
      windowStart: at(2),
      windowEnd: at(6),
    });
    expect(rows[1]?.runId).toMatch(/^[0-9a-f-]{36}$/);
  });
});
