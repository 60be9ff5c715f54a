import { emittedEventId, taskWorkflowId } from '@activity-core/contracts';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startStack, waitFor, type TestStack } from './harness';
import { killHard, spawnWorkerProcess } from './worker-process';

/**
 * `wait_for_event` across a crashed worker: the worker runs in its own
 * process and is killed with SIGKILL (no shutdown, no flush) while a run
 * waits for its event. The event then arrives with no worker at all, and a
 * new worker process finishes the run, once.
 */
let stack: TestStack;

beforeAll(async () => {
  stack = await startStack({ worker: false });
});
afterAll(async () => {
  await stack?.close();
});

const MATCH = 'event.data.order_id == trigger.event.data.order_id';

const post = (payload: object) => stack.api.server.inject({ method: 'POST', url: '/v1/events', payload });
const order = (event_id: string, event_type: string, order_id: string, extra: object = {}) => ({
  event_id,
  event_type,
  source: 'shop',
  occurred_at: '2026-03-01T09:00:00Z',
  data: { order_id, ...extra },
});
const getJson = async (url: string) => (await stack.api.server.inject({ method: 'GET', url })).json();

describe('wait_for_event across a worker crash', () => {
  test('a worker killed while a run waits for an event: the event resumes the run on a new worker process, exactly once', async () => {
    const created = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'await-payment-crash',
        triggers: [{ type: 'event', event_type: 'order.created' }],
        tasks: [
          { type: 'wait_for_event', config: { event_type: 'order.paid', match: MATCH, timeout: '1h' } },
          { type: 'emit_event', config: { event_type: 'order.ready', data: { payment: '{{ tasks.0.result }}' } } },
        ],
      },
    });
    expect(created.statusCode, created.body).toBe(201);

    const first = spawnWorkerProcess(stack.config);
    let second: ReturnType<typeof spawnWorkerProcess> | undefined;
    try {
      await first.ready;
      const accepted = await post(order('evt_created_k', 'order.created', 'K'));
      expect(accepted.statusCode, accepted.body).toBe(202);
      const runId: string = accepted.json().runs[0].run_id;
      const waitId = taskWorkflowId(runId, 'wait_for_event', 0);
      await waitFor(
        `run ${runId} waiting`,
        async () => {
          const run = await getJson(`/v1/runs/${runId}`);
          return run.tasks?.[0]?.wait?.status === 'waiting' ? run : undefined;
        },
        60_000,
      );

      await killHard(first.child);
      expect(first.exited()).toBe('SIGKILL');

      // No worker runs: the event is matched and the task workflow signalled all the same.
      expect((await post(order('evt_paid_other', 'order.paid', 'OTHER'))).statusCode).toBe(202);
      const paid = order('evt_paid_k', 'order.paid', 'K', { amount: 9 });
      expect((await post(paid)).statusCode).toBe(202);
      expect((await post(paid)).json().status).toBe('duplicate');
      const log = await waitFor('the match recorded and signalled', async () => {
        const event = await getJson('/v1/events/evt_paid_k');
        return event.waits.resumed[0]?.signal === 'delivered' && event.routing_state === 'routed' ? event : undefined;
      });
      expect(log.waits.resumed).toEqual([expect.objectContaining({ wait_id: waitId, run_id: runId })]);
      expect((await getJson(`/v1/runs/${runId}`)).status).toBe('running');

      second = spawnWorkerProcess(stack.config);
      await second.ready;
      const run = await waitFor(
        `run ${runId} ended`,
        async () => {
          const current = await getJson(`/v1/runs/${runId}`);
          return current.status === 'succeeded' || current.status === 'failed' ? current : undefined;
        },
        90_000,
      );
      expect(run.status).toBe('succeeded');
      expect(run.tasks).toHaveLength(2);
      expect(run.tasks[0]).toMatchObject({
        status: 'succeeded',
        result: { event_id: 'evt_paid_k', data: { order_id: 'K', amount: 9 } },
        wait: { wait_id: waitId, status: 'matched', matched_event_id: 'evt_paid_k', signal: 'delivered' },
      });
      expect(run.tasks[1].status).toBe('succeeded');

      // Exactly once: one wait row, one match, one next-task event, one execution of the wait task.
      const counts = await stack.sql.query(
        `SELECT (SELECT count(*)::int FROM event_waits WHERE run_id = $1) AS waits,
                (SELECT count(*)::int FROM event_waits WHERE status = 'matched') AS matched,
                (SELECT count(*)::int FROM events WHERE event_type = 'order.ready') AS emitted`,
        [runId],
      );
      expect(counts.rows[0]).toEqual({ waits: 1, matched: 1, emitted: 1 });
      const emitted = await getJson(`/v1/events/${emittedEventId(runId, 1)}`);
      expect(emitted.envelope.data.payment).toMatchObject({ event_id: 'evt_paid_k' });
      const history = await stack.client.workflow.getHandle(waitId).fetchHistory();
      const events = history.events ?? [];
      expect(events.filter((event) => event.workflowExecutionCompletedEventAttributes != null)).toHaveLength(1);
      expect(events.filter((event) => event.workflowExecutionSignaledEventAttributes != null)).toHaveLength(1);
      const registrations = events.filter(
        (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'registerEventWait',
      );
      expect(registrations).toHaveLength(1);
    } finally {
      await killHard(first.child);
      if (second !== undefined) await killHard(second.child);
    }
  }, 180_000);
});
