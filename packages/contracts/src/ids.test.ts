import { v5 as referenceUuidv5 } from 'uuid';
import { describe, expect, test } from 'vitest';
import {
  ACTIVITY_CORE_UUID_NAMESPACE,
  batchItemEventId,
  batchRunWorkflowId,
  parseBatchRunWorkflowId,
  bulkRerunId,
  bulkRerunKey,
  rerunWorkflowId,
  concurrencyCoordinatorWorkflowId,
  cronOverlapCoordinatorWorkflowId,
  httpTaskAttemptId,
  MAX_BATCH_IDEMPOTENCY_KEY,
  reservedEventIdReason,
  isRunOutcomeEventId,
  runOutcomeEventId,
  cronRunWorkflowId,
  CREDENTIAL_LABEL,
  formatCredentialLabel,
  parseCredentialLabel,
  type Credential,
  emittedEventId,
  eventRunWorkflowId,
  formatScheduledFor,
  manualRunWorkflowId,
  parseManualRunWorkflowId,
  parseScheduledFor,
  resumeTickWorkflowId,
  runIdFor,
  scheduleTickWorkflowId,
  taskInstanceIdFor,
  taskWorkflowId,
  temporalScheduleId,
  toScheduledFor,
  uuidv5,
} from './ids';

const ACTIVITY = '550e8400-e29b-41d4-a716-446655440000';

describe('cron overlap coordinator ids', () => {
  test('one per activity and cron trigger, never equal to a concurrency coordinator id whatever the key', () => {
    expect(cronOverlapCoordinatorWorkflowId(ACTIVITY, 0)).toBe(`overlap-${ACTIVITY}-0`);
    expect(cronOverlapCoordinatorWorkflowId(ACTIVITY, 3)).toBe(`overlap-${ACTIVITY}-3`);
    for (const key of ['', 'cron:0', `overlap-${ACTIVITY}-0`])
      expect(concurrencyCoordinatorWorkflowId(ACTIVITY, key)).not.toBe(cronOverlapCoordinatorWorkflowId(ACTIVITY, 0));
    expect(() => cronOverlapCoordinatorWorkflowId(ACTIVITY, -1)).toThrow();
    expect(() => cronOverlapCoordinatorWorkflowId('not-a-uuid', 0)).toThrow();
  });
});

describe('run workflow ids', () => {
  test('a cron run id matches the documented example exactly', () => {
    expect(cronRunWorkflowId(ACTIVITY, new Date('2026-03-01T09:00:00Z'))).toBe(
      'activity-550e8400-e29b-41d4-a716-446655440000:2026-03-01T09:00:00+00:00',
    );
  });

  test('an event run id matches the documented example exactly', () => {
    expect(eventRunWorkflowId(ACTIVITY, 'evt_abc123')).toBe('activity-550e8400-e29b-41d4-a716-446655440000:evt_abc123');
  });

  test('scheduled_for drops milliseconds instead of rounding them', () => {
    expect(formatScheduledFor(new Date('2026-03-01T09:00:00.999Z'))).toBe('2026-03-01T09:00:00+00:00');
  });

  test('scheduled_for is always rendered in UTC whatever offset the instant was written with', () => {
    expect(formatScheduledFor(new Date('2026-03-01T10:00:00+01:00'))).toBe('2026-03-01T09:00:00+00:00');
    expect(formatScheduledFor(new Date('2026-10-25T02:30:00+02:00'))).toBe('2026-10-25T00:30:00+00:00');
  });

  test('scheduled_for uses +00:00 and never Z', () => {
    expect(formatScheduledFor(new Date(Date.UTC(2026, 0, 1)))).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
  });

  test('parseScheduledFor accepts only the canonical form', () => {
    expect(parseScheduledFor('2026-03-01T09:00:00+00:00').toISOString()).toBe('2026-03-01T09:00:00.000Z');
    expect(() => parseScheduledFor('2026-03-01T09:00:00Z')).toThrow();
    expect(() => parseScheduledFor('2026-03-01T09:00:00.000+00:00')).toThrow();
    expect(() => parseScheduledFor('2026-02-30T09:00:00+00:00')).toThrow();
  });

  test('an activity id that is not a lowercase uuid is refused', () => {
    expect(() => eventRunWorkflowId(ACTIVITY.toUpperCase(), 'e')).toThrow(/lowercase UUID/);
    expect(() => cronRunWorkflowId('not-a-uuid', new Date())).toThrow();
  });

  test('manual run ids can never collide with cron or event run ids', () => {
    const manual = manualRunWorkflowId(ACTIVITY, '2026-03-01T09:00:00+00:00');
    expect(manual).toBe(`manual-${ACTIVITY}:2026-03-01T09:00:00+00:00`);
    expect(manual.startsWith('activity-')).toBe(false);
  });
});

describe('batch run ids', () => {
  const WINDOW = '0b5f4c1e-6a2d-4e8f-9c3b-7d1a2e3f4a5b';

  test('a batch run id is activity-{activity_id}:batch:{window_id} and reads back', () => {
    const id = batchRunWorkflowId(ACTIVITY, WINDOW);
    expect(id).toBe(`activity-${ACTIVITY}:batch:${WINDOW}`);
    expect(parseBatchRunWorkflowId(id)).toEqual({ activityId: ACTIVITY, windowId: WINDOW });
    expect(parseBatchRunWorkflowId(eventRunWorkflowId(ACTIVITY, 'evt_1'))).toBeUndefined();
    expect(() => batchRunWorkflowId(ACTIVITY, 'not-a-uuid')).toThrow(/lowercase UUID/);
  });

  test('no event a producer may post can have a batch run id as its run id: batch: event ids are reserved', () => {
    const eventId = `batch:${WINDOW}`;
    expect(eventRunWorkflowId(ACTIVITY, eventId)).toBe(batchRunWorkflowId(ACTIVITY, WINDOW));
    expect(reservedEventIdReason(eventId)).toMatch(/reserved/);
    expect(reservedEventIdReason('batch:anything')).toMatch(/batch/);
    expect(reservedEventIdReason('batch-42')).toBeUndefined();
  });
});

describe('fire times (scheduled_for)', () => {
  test('any RFC 3339 instant names the same fire time, whatever its offset or fractions', () => {
    const expected = new Date('2026-03-01T09:00:00Z').getTime();
    for (const value of [
      '2026-03-01T09:00:00Z',
      '2026-03-01T09:00:00.000Z',
      '2026-03-01T09:00:00.999Z',
      '2026-03-01T10:00:00+01:00',
      '2026-03-01T04:30:00.5-04:30',
      '2026-03-01T09:00:00+00:00',
    ]) {
      expect(toScheduledFor(value).getTime(), value).toBe(expected);
    }
  });

  test('a Date names the fire time of its whole second, truncated and never rounded up', () => {
    expect(toScheduledFor(new Date('2026-03-01T09:00:00.999Z')).toISOString()).toBe('2026-03-01T09:00:00.000Z');
    expect(toScheduledFor(new Date('1969-12-31T23:59:59.500Z')).toISOString()).toBe('1969-12-31T23:59:59.000Z');
  });

  test("Temporal's form of a nominal time (as the tick workflow passes it) formats to the canonical form", () => {
    expect(formatScheduledFor(toScheduledFor('2026-03-01T09:00:00.000Z'))).toBe('2026-03-01T09:00:00+00:00');
  });

  test('the canonical form reads back to the instant it was made from', () => {
    const instant = new Date('2026-10-25T01:30:00Z');
    expect(parseScheduledFor(formatScheduledFor(instant)).getTime()).toBe(instant.getTime());
    expect(toScheduledFor(formatScheduledFor(instant)).getTime()).toBe(instant.getTime());
  });

  test('strings that are not RFC 3339 instants, or name no real time, are refused', () => {
    for (const value of [
      '2026-03-01',
      '2026-03-01T09:00Z',
      '2026-03-01T09:00:00',
      '2026-03-01 09:00:00Z',
      '2026-03-01T09:00:00+0100',
      'March 1, 2026',
      '2026-02-30T09:00:00Z',
      '2026-03-01T24:00:00Z',
      '2026-03-01T09:00:60Z',
      '2026-03-01T09:00:00+24:00',
    ]) {
      expect(() => toScheduledFor(value), value).toThrow();
    }
    expect(() => toScheduledFor(new Date(Number.NaN))).toThrow();
  });
});

describe('schedule ids', () => {
  test("a cron trigger's Temporal Schedule is named after the activity and the trigger position", () => {
    expect(temporalScheduleId(ACTIVITY, 0)).toBe('schedule-550e8400-e29b-41d4-a716-446655440000-0');
    expect(temporalScheduleId(ACTIVITY, 12)).toBe('schedule-550e8400-e29b-41d4-a716-446655440000-12');
  });

  test('the tick workflow id of a schedule is its base id, to which Temporal appends the nominal time', () => {
    expect(scheduleTickWorkflowId(ACTIVITY, 2)).toBe('schedule-tick-550e8400-e29b-41d4-a716-446655440000-2');
  });

  test('a resume tick id carries the resume instant with milliseconds, so two resumes in one second are two ticks', () => {
    expect(resumeTickWorkflowId(ACTIVITY, 1, new Date('2026-03-01T09:00:00.123Z'))).toBe(
      'schedule-tick-550e8400-e29b-41d4-a716-446655440000-1-resume-2026-03-01T09:00:00.123Z',
    );
    expect(resumeTickWorkflowId(ACTIVITY, 1, new Date('2026-03-01T09:00:00.124Z'))).not.toBe(
      resumeTickWorkflowId(ACTIVITY, 1, new Date('2026-03-01T09:00:00.123Z')),
    );
  });

  test('schedule ids refuse an activity id that is not a lowercase uuid and a trigger index that is not a position', () => {
    expect(() => temporalScheduleId(ACTIVITY.toUpperCase(), 0)).toThrow(/lowercase UUID/);
    expect(() => scheduleTickWorkflowId(ACTIVITY, -1)).toThrow(/trigger index/);
    expect(() => temporalScheduleId(ACTIVITY, 1.5)).toThrow(/trigger index/);
    expect(() => resumeTickWorkflowId(ACTIVITY, 0, new Date(Number.NaN))).toThrow();
  });
});

describe('derived uuids', () => {
  test('uuidv5 agrees with the reference implementation', () => {
    for (const name of ['', 'a', 'activity-x:evt_1', 'ünïcödé ✓', 'x'.repeat(1000)]) {
      expect(uuidv5(name)).toBe(referenceUuidv5(name, ACTIVITY_CORE_UUID_NAMESPACE));
    }
    expect(uuidv5('www.example.com', '6ba7b810-9dad-11d1-80b4-00c04fd430c8')).toBe(
      '2ed6657d-e927-568b-95e1-2665a8aea6a2',
    );
  });

  test('the run id is the uuidv5 of the run workflow id and is stable', () => {
    const workflowId = eventRunWorkflowId(ACTIVITY, 'evt_abc123');
    expect(runIdFor(workflowId)).toBe(referenceUuidv5(workflowId, ACTIVITY_CORE_UUID_NAMESPACE));
    expect(runIdFor(workflowId)).toBe(runIdFor(`${workflowId}`));
    expect(runIdFor(workflowId)).not.toBe(runIdFor(eventRunWorkflowId(ACTIVITY, 'evt_abc124')));
  });

  test('task workflow ids follow task-{run_id}:{type}:{index}', () => {
    const runId = runIdFor('activity-x:1');
    expect(taskWorkflowId(runId, 'http', 0)).toBe(`task-${runId}:http:0`);
    expect(() => taskWorkflowId(runId, 'http', -1)).toThrow();
    expect(() => taskWorkflowId(runId, 'http', 1.5)).toThrow();
    expect(taskInstanceIdFor(taskWorkflowId(runId, 'http', 0))).toMatch(/^[0-9a-f-]{36}$/);
  });

  test('an emitted event id is derived from the run and the task index', () => {
    const runId = runIdFor('activity-x:1');
    expect(emittedEventId(runId, 2)).toBe(`emit-${runId}:2`);
  });
});

describe('reserved event ids', () => {
  test('ids shaped like a cron fire time and emit- ids are reserved; ordinary ids are not', () => {
    expect(reservedEventIdReason('2026-03-01T09:00:00+00:00')).toMatch(/cron fire time/);
    expect(reservedEventIdReason('emit-x:0')).toMatch(/emit_event/);
    expect(reservedEventIdReason('evt_abc123')).toBeUndefined();
    expect(reservedEventIdReason('2026-03-01T09:00:00Z')).toBeUndefined();
  });

  test('the ids of run-outcome system events are reserved; other ids starting with run- are not', () => {
    const runId = runIdFor('activity-x:1');
    expect(reservedEventIdReason(runOutcomeEventId(runId, 'failed'))).toMatch(/run's end/);
    expect(reservedEventIdReason(`run-cancelled:${runId}`)).toMatch(/run's end/);
    expect(reservedEventIdReason('run-failed:anything')).toMatch(/run's end/);
    expect(reservedEventIdReason('run-42')).toBeUndefined();
    expect(reservedEventIdReason('run-failed-42')).toBeUndefined();
  });
});

describe('run-outcome event ids', () => {
  test('one id per run and outcome, derived from the run id alone', () => {
    const runId = runIdFor('activity-550e8400-e29b-41d4-a716-446655440000:evt_abc123');
    expect(runOutcomeEventId(runId, 'failed')).toBe(`run-failed:${runId}`);
    expect(runOutcomeEventId(runId, 'cancelled')).toBe(`run-cancelled:${runId}`);
    expect(isRunOutcomeEventId(runOutcomeEventId(runId, 'failed'))).toBe(true);
    expect(isRunOutcomeEventId(`emit-${runId}:0`)).toBe(false);
    expect(() => runOutcomeEventId('NOT-A-UUID', 'failed')).toThrow(/lowercase UUID/);
  });
});

describe('ids derived for retries', () => {
  test('a batch item sent without an id is named by the batch key and its position, so a resent batch names the same events', () => {
    expect(batchItemEventId('order-batch-7', 0)).toBe('order-batch-7#0');
    expect(batchItemEventId('order-batch-7', 99)).toBe('order-batch-7#99');
    // The longest key with the largest index still fits the 200-character event id.
    expect(batchItemEventId('k'.repeat(MAX_BATCH_IDEMPOTENCY_KEY), 99_999)).toHaveLength(200);
  });

  test('each attempt of an http task has its own attempt id under the one task workflow id', () => {
    const task = taskWorkflowId('6f1c0d4e-0000-5000-8000-000000000000', 'http', 1);
    expect(httpTaskAttemptId(task, 1)).toBe(`${task}#1`);
    expect(httpTaskAttemptId(task, 2)).not.toBe(httpTaskAttemptId(task, 1));
  });
});

describe('concurrency coordinator ids', () => {
  const activityId = '0f8fad5b-d9cb-469f-a165-70867728950e';

  test('the activity-wide key names the activity alone', () => {
    expect(concurrencyCoordinatorWorkflowId(activityId, '')).toBe(`concurrency-${activityId}`);
  });

  test('a key becomes 32 hex digits of its SHA-256, the same every time and different per key', () => {
    const acme = concurrencyCoordinatorWorkflowId(activityId, 'acme');
    // The first 128 bits of sha256("acme").
    expect(acme).toBe(`concurrency-${activityId}:822b33ad87c148a0a20a5ba7cd5ebcaa`);
    expect(acme).toBe(concurrencyCoordinatorWorkflowId(activityId, 'acme'));
    expect(acme).not.toBe(concurrencyCoordinatorWorkflowId(activityId, 'globex'));
    expect(concurrencyCoordinatorWorkflowId(activityId, 'x'.repeat(10_000)).length).toBe(
      `concurrency-${activityId}:`.length + 32,
    );
  });

  test('refuses an activity id that is not a lowercase uuid', () => {
    expect(() => concurrencyCoordinatorWorkflowId('nope', 'k')).toThrow(/activity_id/);
  });
});

describe('re-run ids', () => {
  test('a re-run is rerun-<original run id>:<attempt>, and its run id is derived from that like every run', () => {
    const derive = runIdFor;
    const original = 'aac514cc-a111-570e-9c6b-69b77fb14d00';
    expect(rerunWorkflowId(original, 1)).toBe('rerun-aac514cc-a111-570e-9c6b-69b77fb14d00:1');
    expect(derive(rerunWorkflowId(original, 2))).not.toBe(derive(rerunWorkflowId(original, 1)));
  });

  test('attempts start at 1 and originals must be lowercase UUIDs', () => {
    expect(() => rerunWorkflowId('aac514cc-a111-570e-9c6b-69b77fb14d00', 0)).toThrow(/positive integer/);
    expect(() => rerunWorkflowId('AAC514CC-A111-570E-9C6B-69B77FB14D00', 1)).toThrow(/lowercase UUID/);
  });

  test('a bulk re-run keyed by an Idempotency-Key always has the same id', () => {
    expect(bulkRerunId('outage-1')).toBe(bulkRerunId('outage-1'));
    expect(bulkRerunId('outage-1')).not.toBe(bulkRerunId('outage-2'));
    expect(bulkRerunKey(bulkRerunId('outage-1'))).toBe(`bulk:${bulkRerunId('outage-1')}`);
  });
});

describe('reading a manual run id', () => {
  test('gives back the key of a manual run of the activity, and nothing for any other run id', () => {
    const key = 'k:with:colons';
    expect(parseManualRunWorkflowId(manualRunWorkflowId(ACTIVITY, key), ACTIVITY)).toBe(key);
    expect(parseManualRunWorkflowId(eventRunWorkflowId(ACTIVITY, 'e1'), ACTIVITY)).toBeUndefined();
    expect(
      parseManualRunWorkflowId(manualRunWorkflowId(ACTIVITY, key), '550e8400-e29b-41d4-a716-446655440001'),
    ).toBeUndefined();
  });
});

describe('credential labels', () => {
  const RUN = 'aac514cc-a111-570e-9c6b-69b77fb14d00';
  const credentials: Array<[Credential, string]> = [
    [{ kind: 'api_key', id: '3f9a0c1b2d4e' }, 'api_key:3f9a0c1b2d4e'],
    [{ kind: 'ingest_key', id: '3f9a0c1b2d4e' }, 'ingest_key:3f9a0c1b2d4e'],
    [{ kind: 'webhook', source: 'github' }, 'webhook:github'],
    [{ kind: 'emit', runId: RUN }, `emit:${RUN}`],
    [{ kind: 'system', runId: RUN }, `system:${RUN}`],
    [{ kind: 'anonymous' }, 'anonymous'],
  ];

  test.each(credentials)('%j is labelled %s and the label parses back to it', (credential, label) => {
    expect(formatCredentialLabel(credential)).toBe(label);
    expect(parseCredentialLabel(label)).toEqual(credential);
  });

  test('a webhook source with a colon keeps everything after the first colon', () => {
    const label = formatCredentialLabel({ kind: 'webhook', source: 'shop:orders' });
    expect(label).toBe('webhook:shop:orders');
    expect(parseCredentialLabel(label)).toEqual({ kind: 'webhook', source: 'shop:orders' });
  });

  test('a string that names no credential parses to nothing', () => {
    for (const label of ['', 'api_key', 'api_key:', ':3f9a0c1b2d4e', 'user:3f9a0c1b2d4e', 'Anonymous'])
      expect(parseCredentialLabel(label)).toBeUndefined();
  });

  test('the labels of keys and anonymous are the actors the audit log accepts', () => {
    expect(formatCredentialLabel({ kind: 'api_key', id: '3f9a0c1b2d4e' })).toMatch(CREDENTIAL_LABEL);
    expect(formatCredentialLabel({ kind: 'ingest_key', id: '3f9a0c1b2d4e' })).toMatch(CREDENTIAL_LABEL);
    expect(formatCredentialLabel({ kind: 'anonymous' })).toMatch(CREDENTIAL_LABEL);
  });
});
