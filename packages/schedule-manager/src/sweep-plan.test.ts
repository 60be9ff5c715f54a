import { temporalScheduleId, type CronTrigger } from '@activity-core/contracts';
import type { DefinitionRow, ScheduleStateRow } from '@activity-core/db';
import { describe, expect, test } from 'vitest';
import { desiredSchedule } from './schedule-options';
import { compareDescription, listedAsDesired, needsProcessing, stateInStep } from './sweep-plan';

const ACTIVITY = '550e8400-e29b-41d4-a716-446655440000';
const at = (minute: number, second = 0): Date => new Date(Date.UTC(2026, 2, 2, 10, minute, second));
const trigger = (extra: Partial<CronTrigger> = {}): CronTrigger => ({
  type: 'cron',
  cron: '*/10 * * * *',
  timezone: 'UTC',
  misfire_policy: 'skip',
  max_catchup: 10,
  misfire_grace: '60s',
  ...extra,
});
const row = (extra: Partial<DefinitionRow> = {}, cron = trigger()): DefinitionRow =>
  ({
    id: ACTIVITY,
    name: 'ten-minutely',
    version: 3,
    enabled: true,
    definition: { name: 'ten-minutely', triggers: [cron], tasks: [{ type: 'noop' }] },
    ...extra,
  }) as DefinitionRow;
const state = (extra: Partial<ScheduleStateRow> = {}): ScheduleStateRow => ({
  activityId: ACTIVITY,
  triggerIndex: 0,
  scheduleId: temporalScheduleId(ACTIVITY, 0),
  trigger: trigger(),
  processedThrough: at(0, 1),
  lastWindowEnd: at(0),
  active: true,
  paused: false,
  pauseNote: null,
  pausedAt: null,
  createdAt: at(0),
  updatedAt: at(0),
  ...extra,
});
const desired = (cause: Parameters<typeof desiredSchedule>[0]['cause'] = { kind: 'running' }, version = 3) =>
  desiredSchedule({
    row: { id: ACTIVITY, name: 'ten-minutely', version },
    trigger: trigger(),
    triggerIndex: 0,
    taskQueue: 'q',
    cause,
  });

describe('whether Temporal already has a schedule as desired', () => {
  const described = (
    want: ReturnType<typeof desired>,
    extra: { paused?: boolean; note?: string; version?: number; revision?: string } = {},
  ) => ({
    action: {
      args: [
        {
          ...want.tickInput,
          definitionVersion: extra.version ?? want.tickInput.definitionVersion,
          revision: extra.revision ?? want.revision,
        },
      ],
    },
    state: { paused: extra.paused ?? want.paused, note: extra.note ?? want.note },
  });

  test('a description with the same revision, pause state and note is as desired', () => {
    const want = desired();
    expect(compareDescription(described(want), want, 3)).toBe('as_desired');
  });

  test('a different revision, pause state or note differs (a pause or resume done in Temporal directly is undone)', () => {
    const want = desired();
    expect(compareDescription(described(want, { revision: 'other' }), want, 3)).toBe('differs');
    expect(compareDescription(described(want, { paused: true }), want, 3)).toBe('differs');
    expect(compareDescription(described(want, { note: 'Paused via the Temporal UI' }), want, 3)).toBe('differs');
  });

  test('a schedule written from a later definition version is never overwritten by a holder of an older one', () => {
    const older = desired({ kind: 'running' }, 2);
    expect(compareDescription(described(desired(), { paused: true }), older, 2)).toBe('newer');
  });

  test('the note names the revision, so a listing entry with the desired note and pause state is as desired', () => {
    const want = desired();
    expect(want.note).toContain(`rev ${want.revision}`);
    const entry = { memo: { managedBy: 'activity-core', taskQueue: 'q' }, state: { paused: false, note: want.note } };
    expect(listedAsDesired(entry, want, 'q')).toBe(true);
  });

  test('a listing entry that is missing, of another task queue, paused differently or with another note is not', () => {
    const want = desired();
    const entry = { memo: { managedBy: 'activity-core', taskQueue: 'q' }, state: { paused: false, note: want.note } };
    expect(listedAsDesired(undefined, want, 'q')).toBe(false);
    expect(listedAsDesired(entry, want, 'other')).toBe(false);
    expect(listedAsDesired({ ...entry, state: { paused: true, note: want.note } }, want, 'q')).toBe(false);
    expect(
      listedAsDesired(
        { ...entry, state: { paused: false, note: want.note.replace(want.revision, '0000000000000000') } },
        want,
        'q',
      ),
    ).toBe(false);
    expect(listedAsDesired({ ...entry, state: { paused: false } }, want, 'q')).toBe(false);
    // An operator pause changes the note (and the pause state) that is desired.
    expect(listedAsDesired(entry, desired({ kind: 'operator', note: 'vendor maintenance' }), 'q')).toBe(false);
  });
});

describe('whether a trigger state is in step with its definition', () => {
  test('is when nothing would be written; is not when missing, re-enabled, disabled or its fire times changed', () => {
    expect(stateInStep(state(), true, trigger(), at(5))).toBe(true);
    expect(stateInStep(undefined, true, trigger(), at(5))).toBe(false);
    expect(stateInStep(state({ active: false }), true, trigger(), at(5))).toBe(false);
    expect(stateInStep(state(), false, trigger(), at(5))).toBe(false);
    expect(stateInStep(state(), true, trigger({ cron: '*/5 * * * *' }), at(5))).toBe(false);
    // A policy change is written too (the state keeps the trigger as last applied).
    expect(stateInStep(state(), true, trigger({ misfire_policy: 'catchup', max_catchup: 10 }), at(5))).toBe(false);
  });
});

describe('whether the sweep has anything to decide for a trigger', () => {
  const check = (
    extra: {
      state?: Partial<ScheduleStateRow>;
      row?: DefinitionRow | undefined;
      hasPending?: boolean;
      now?: Date;
    } = {},
  ) =>
    needsProcessing({
      state: state(extra.state),
      row: 'row' in extra ? extra.row : row(),
      hasPending: extra.hasPending ?? false,
      now: extra.now ?? at(5),
    });

  test('has nothing when no fire time passed since processed_through and no start is pending', () => {
    expect(check({ now: at(9, 59) })).toBe(false);
  });

  test('has something when a fire time is due and undecided (Temporal never delivered its tick)', () => {
    expect(check({ now: at(10, 0) })).toBe(true);
    expect(check({ now: at(35) })).toBe(true);
  });

  test('has something when a decided run is not confirmed started, or the definition changed', () => {
    expect(check({ hasPending: true })).toBe(true);
    expect(check({ row: row({}, trigger({ cron: '*/5 * * * *' })) })).toBe(true);
    expect(check({ row: row({ enabled: false }) })).toBe(true);
  });

  test('skips paused, inactive and orphaned triggers, as processing them decides nothing', () => {
    expect(check({ state: { paused: true }, now: at(35) })).toBe(false);
    expect(check({ state: { active: false }, now: at(35) })).toBe(false);
    expect(check({ row: undefined, now: at(35) })).toBe(false);
    expect(
      check({
        row: row({
          definition: {
            name: 'x',
            triggers: [{ type: 'event', event_type: 'a.b' }],
            tasks: [{ type: 'noop' }],
          } as DefinitionRow['definition'],
        }),
        now: at(35),
      }),
    ).toBe(false);
  });
});
