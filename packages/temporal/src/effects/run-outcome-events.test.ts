import {
  eventRunWorkflowId,
  InvalidInputError,
  runIdFor,
  taskWorkflowId,
  UnavailableError,
} from '@activity-core/contracts';
import type { RunOutcomeRecord } from '@activity-core/db';
import { describe, expect, test } from 'vitest';
import { createRunOutcomeAnnouncer, runOutcomeEvent, SYSTEM_EVENT_MESSAGE_MAX } from './run-outcome-events';

const runId = runIdFor(eventRunWorkflowId('550e8400-e29b-41d4-a716-446655440000', 'evt_abc123'));

const failedRun = (overrides: Partial<RunOutcomeRecord> = {}): RunOutcomeRecord => ({
  runId,
  workflowId: eventRunWorkflowId('550e8400-e29b-41d4-a716-446655440000', 'evt_abc123'),
  status: 'failed',
  activityId: '550e8400-e29b-41d4-a716-446655440000',
  activityVersion: 3,
  activityName: 'sync-orders',
  triggerType: 'event',
  eventId: 'evt_abc123',
  scheduledFor: null,
  error: { message: 'task 1 (http) failed: HTTP 503', task_index: 1 },
  startedAt: '2026-03-01T09:00:00.000Z',
  finishedAt: '2026-03-01T09:00:04.512Z',
  durationSeconds: 4.512,
  failedTask: {
    index: 1,
    type: 'http',
    workflowId: taskWorkflowId(runId, 'http', 1),
    error: { message: 'HTTP 503', type: 'http_status_503' },
  },
  triggerHops: 0,
  ...overrides,
});

describe('the system event that announces a run end', () => {
  test('a failed run gives activity_core.run.failed from activity-core, with an id derived from the run and the failed task in its data', () => {
    const built = runOutcomeEvent(failedRun());
    if ('skipped' in built) throw new Error('expected an event');
    expect(built.hops).toBe(1);
    expect(built.envelope).toEqual({
      event_id: `run-failed:${runId}`,
      event_type: 'activity_core.run.failed',
      source: 'activity-core',
      subject: runId,
      occurred_at: '2026-03-01T09:00:04.512Z',
      data: {
        run_id: runId,
        workflow_id: eventRunWorkflowId('550e8400-e29b-41d4-a716-446655440000', 'evt_abc123'),
        status: 'failed',
        activity_id: '550e8400-e29b-41d4-a716-446655440000',
        activity_name: 'sync-orders',
        activity_version: 3,
        trigger_type: 'event',
        trigger_event_id: 'evt_abc123',
        scheduled_for: null,
        error: { message: 'task 1 (http) failed: HTTP 503', type: null },
        failed_task: {
          index: 1,
          type: 'http',
          workflow_id: taskWorkflowId(runId, 'http', 1),
          error: { message: 'HTTP 503', type: 'http_status_503' },
        },
        started_at: '2026-03-01T09:00:00.000Z',
        finished_at: '2026-03-01T09:00:04.512Z',
        duration_seconds: 4.512,
      },
    });
  });

  test('the same records always build the same event, so a retry is a duplicate at the ingest', () => {
    expect(runOutcomeEvent(failedRun())).toEqual(runOutcomeEvent(failedRun()));
  });

  test('a cancelled cron run gives activity_core.run.cancelled with its fire time and no failed task', () => {
    const built = runOutcomeEvent(
      failedRun({
        status: 'cancelled',
        triggerType: 'cron',
        eventId: null,
        scheduledFor: '2026-03-01T09:00:00.000Z',
        error: null,
        triggerHops: null,
      }),
    );
    if ('skipped' in built) throw new Error('expected an event');
    expect(built.envelope).toMatchObject({
      event_id: `run-cancelled:${runId}`,
      event_type: 'activity_core.run.cancelled',
    });
    expect(built.envelope.data).toMatchObject({
      status: 'cancelled',
      trigger_event_id: null,
      scheduled_for: '2026-03-01T09:00:00+00:00',
      error: null,
      failed_task: null,
    });
    expect(built.hops).toBe(1);
  });

  test('succeeded, still running and unknown runs are not announced', () => {
    expect(runOutcomeEvent(failedRun({ status: 'succeeded' }))).toEqual({ skipped: 'not_announced' });
    expect(runOutcomeEvent(failedRun({ status: 'skipped' }))).toEqual({ skipped: 'not_announced' });
    expect(runOutcomeEvent(failedRun({ finishedAt: null }))).toEqual({ skipped: 'not_announced' });
    expect(runOutcomeEvent(undefined)).toEqual({ skipped: 'not_announced' });
  });

  test('a run triggered by a run-outcome system event never announces its own end, whatever its hop count', () => {
    const built = runOutcomeEvent(failedRun({ eventId: `run-failed:${runIdFor('activity-x:1')}`, triggerHops: 1 }));
    expect(built).toMatchObject({ skipped: 'triggered_by_system_event', event_id: `run-failed:${runId}` });
  });

  test('an announcement past the hop limit is not emitted', () => {
    expect(runOutcomeEvent(failedRun({ triggerHops: 7 }), 8)).not.toHaveProperty('skipped');
    expect(runOutcomeEvent(failedRun({ triggerHops: 8 }), 8)).toMatchObject({
      skipped: 'hops_exceeded',
      detail: expect.stringContaining('EMIT_MAX_HOPS is 8'),
    });
  });

  test('long error messages are clipped, so the event stays within the ingest limits', () => {
    const built = runOutcomeEvent(failedRun({ error: { message: 'x'.repeat(10_000) } }));
    if ('skipped' in built) throw new Error('expected an event');
    expect(built.envelope.data.error?.message).toHaveLength(SYSTEM_EVENT_MESSAGE_MAX);
  });
});

describe('the announcer', () => {
  const recorder = (fail?: Error) => {
    const sent: Array<{ event_id: string; credential: string; hops: number }> = [];
    return {
      sent,
      emit: async (envelope: { event_id: string }, origin: { credential: string; hops: number }) => {
        if (fail !== undefined) throw fail;
        sent.push({ event_id: envelope.event_id, ...origin });
        return { status: 'accepted', runs: [] };
      },
    };
  };

  test('emits through the ingest with the credential system:<run id> and the hop count', async () => {
    const target = recorder();
    const announcer = createRunOutcomeAnnouncer({
      outcomes: { readRunOutcome: async () => failedRun() },
      emit: target.emit,
    });
    expect(await announcer.announce(runId)).toEqual({
      emitted: true,
      event_id: `run-failed:${runId}`,
      status: 'accepted',
      hops: 1,
    });
    expect(target.sent).toEqual([{ event_id: `run-failed:${runId}`, credential: `system:${runId}`, hops: 1 }]);
  });

  test('an unreachable store is thrown, so the status write is retried and announces later', async () => {
    const announcer = createRunOutcomeAnnouncer({
      outcomes: { readRunOutcome: async () => failedRun() },
      emit: recorder(new UnavailableError('down')).emit,
    });
    await expect(announcer.announce(runId)).rejects.toBeInstanceOf(UnavailableError);
  });

  test('a refusal a retry cannot change is logged and answered, never thrown: bookkeeping does not fail for good', async () => {
    const warnings: unknown[] = [];
    const announcer = createRunOutcomeAnnouncer({
      outcomes: { readRunOutcome: async () => failedRun() },
      emit: recorder(new InvalidInputError('too big', [])).emit,
      logger: { info: () => undefined, warn: (entry: unknown) => void warnings.push(entry) },
    });
    expect(await announcer.announce(runId)).toMatchObject({
      emitted: false,
      reason: 'refused',
      event_id: `run-failed:${runId}`,
    });
    expect(warnings).toHaveLength(1);
  });
});
