import { emittedEventId, taskWorkflowId } from '@activity-core/contracts';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createWorkerApp } from '../apps/worker/src/worker-app';
import { recordGoldenHistory } from './golden-histories';
import { silentLogger, startStack, waitFor, workflowBundle, type TestStack } from './harness';

/**
 * `wait_for_event` on the real stack: a run waits in a task until an event
 * matching it arrives through the ordinary ingest, or its timeout passes;
 * the next task reads what ended the wait.
 */
let stack: TestStack;

beforeAll(async () => {
  stack = await startStack();
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

/** Registers an activity that waits for `order.paid` of its own order, then emits what it saw. */
async function register(name: string, timeout: string, triggerType: string): Promise<string> {
  const response = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/activities',
    payload: {
      name,
      triggers: [{ type: 'event', event_type: triggerType }],
      tasks: [
        { type: 'wait_for_event', config: { event_type: 'order.paid', match: MATCH, timeout } },
        {
          type: 'emit_event',
          config: {
            event_type: 'order.seen',
            data: { outcome: '{{ tasks.0.result }}' },
          },
        },
      ],
    },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().id as string;
}

/** Posts a trigger event and waits until its run's wait is registered. */
async function startWaitingRun(eventId: string, eventType: string, orderId: string): Promise<string> {
  const response = await post(order(eventId, eventType, orderId));
  expect(response.statusCode, response.body).toBe(202);
  const runId: string = response.json().runs[0].run_id;
  await waitFor(`run ${runId} waiting`, async () => {
    const run = await getJson(`/v1/runs/${runId}`);
    return run.tasks?.[0]?.wait?.status === 'waiting' ? run : undefined;
  });
  return runId;
}

async function runEnded(runId: string, timeoutMs = 60_000) {
  return await waitFor(
    `run ${runId} ended`,
    async () => {
      const run = await getJson(`/v1/runs/${runId}`);
      return run.status === 'succeeded' || run.status === 'failed' ? run : undefined;
    },
    timeoutMs,
  );
}

/**
 * The wait task's history replays on today's code; with RECORD_HISTORIES set it is
 * added as a golden history (see test/golden-histories.ts).
 */
async function replayAndRecord(name: string, waitId: string): Promise<void> {
  const history = await stack.client.workflow.getHandle(waitId).fetchHistory();
  await expect(
    Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, waitId),
  ).resolves.toBeUndefined();
  await recordGoldenHistory(name, history, waitId);
}

/** What the run's second task emitted: the first task's result as the next task saw it. */
async function seenByNextTask(runId: string): Promise<unknown> {
  return (await getJson(`/v1/events/${emittedEventId(runId, 1)}`)).envelope.data.outcome;
}

describe('wait_for_event', () => {
  test('an invalid match expression or timeout is refused at registration with a 400 naming the field', async () => {
    const cases: Array<[object, string]> = [
      [{ event_type: 'order.paid', match: 'event.data.order_id ==', timeout: '1h' }, 'tasks[1].config.match'],
      [{ event_type: 'order.paid', match: 'data.order_id == "A"', timeout: '1h' }, 'tasks[1].config.match'],
      [{ event_type: 'order.paid', match: '"not a boolean"', timeout: '1h' }, 'tasks[1].config.match'],
      [{ event_type: 'order.paid', timeout: '500ms' }, 'tasks[1].config.timeout'],
      [{ event_type: 'order.paid', timeout: '366d' }, 'tasks[1].config.timeout'],
      [{ event_type: 'order.*', timeout: '1h' }, 'tasks[1].config.event_type'],
      // The worst values: huge, path-like, deep, over-long, unknown keys, absurd durations.
      [{ event_type: 'o'.repeat(201), timeout: '1h' }, 'tasks[1].config.event_type'],
      [{ event_type: '../../etc/passwd', timeout: '1h' }, 'tasks[1].config.event_type'],
      [{ event_type: 'order.paid', match: `${'true && '.repeat(600)}true`, timeout: '1h' }, 'tasks[1].config.match'],
      // Nested past the filter engine's depth limit of 100.
      [
        { event_type: 'order.paid', match: `event.data${'.x'.repeat(150)} == 1`, timeout: '1h' },
        'tasks[1].config.match',
      ],
      [{ event_type: 'order.paid', timeout: '99999999999999999999d' }, 'tasks[1].config.timeout'],
      [{ event_type: 'order.paid', timeout: '1h', url: 'http://example.com' }, 'tasks[1].config'],
    ];
    for (const [config, path] of cases) {
      const response = await stack.api.server.inject({
        method: 'POST',
        url: '/v1/activities',
        payload: {
          name: 'bad-wait',
          triggers: [{ type: 'event', event_type: 'order.created' }],
          tasks: [{ type: 'noop' }, { type: 'wait_for_event', config }],
        },
      });
      expect(response.statusCode, JSON.stringify(config)).toBe(400);
      expect(
        response.json().errors.map((error: { path: string }) => error.path),
        JSON.stringify(config),
      ).toContain(path);
    }
  });

  test('a run waits until the matching event arrives, another order’s event does not resume it, and the next task sees the event', async () => {
    const activityId = await register('await-payment', '1h', 'order.created');
    const runA = await startWaitingRun('evt_created_a', 'order.created', 'A');

    // Another order's payment: examined, not matched; the run keeps waiting.
    expect((await post(order('evt_paid_z', 'order.paid', 'Z'))).statusCode).toBe(202);
    const other = await waitFor('the non-matching event routed', async () => {
      const log = await getJson('/v1/events/evt_paid_z');
      return log.routing_state === 'routed' ? log : undefined;
    });
    expect(other.waits).toEqual({ scan: expect.objectContaining({ examined: 1, matched: 0, errors: 0 }), resumed: [] });
    expect((await getJson(`/v1/runs/${runA}`)).tasks[0].wait.status).toBe('waiting');

    // Order A's payment resumes A's run, once, however often it is delivered.
    const paid = order('evt_paid_a', 'order.paid', 'A', { amount: 42 });
    expect((await post(paid)).statusCode).toBe(202);
    expect((await post(paid)).json().status).toBe('duplicate');
    const run = await runEnded(runA);
    expect(run.status).toBe('succeeded');
    const waitId = taskWorkflowId(runA, 'wait_for_event', 0);
    expect(run.tasks[0]).toMatchObject({
      status: 'succeeded',
      result: { event_id: 'evt_paid_a', event_type: 'order.paid', source: 'shop', data: { order_id: 'A', amount: 42 } },
      wait: {
        wait_id: waitId,
        status: 'matched',
        matched_event_id: 'evt_paid_a',
        signal: 'delivered',
        detail: `matched: ${MATCH}`,
      },
    });
    expect(await seenByNextTask(runA)).toEqual({
      event_id: 'evt_paid_a',
      event_type: 'order.paid',
      source: 'shop',
      occurred_at: '2026-03-01T09:00:00Z',
      data: { order_id: 'A', amount: 42 },
    });

    const log = await getJson('/v1/events/evt_paid_a');
    expect(log.routing_state).toBe('routed');
    expect(log.waits.scan).toMatchObject({ examined: 1, matched: 1, errors: 0, capped: false });
    expect(log.waits.resumed).toEqual([
      expect.objectContaining({
        wait_id: waitId,
        run_id: runA,
        activity_id: activityId,
        task_index: 0,
        signal: 'delivered',
      }),
    ]);
    const counts = await stack.sql.query(
      `SELECT (SELECT count(*)::int FROM event_wait_scans WHERE event_id = 'evt_paid_a') AS scans,
              (SELECT count(*)::int FROM event_waits WHERE matched_event_id = 'evt_paid_a') AS matches`,
    );
    expect(counts.rows[0]).toEqual({ scans: 1, matches: 1 });

    // A second payment for the same order finds no open wait: the first match stands.
    expect((await post(order('evt_paid_a_again', 'order.paid', 'A'))).statusCode).toBe(202);
    expect((await getJson('/v1/events/evt_paid_a_again')).waits).toEqual({ scan: null, resumed: [] });
    expect((await getJson(`/v1/runs/${runA}`)).tasks[0].wait.matched_event_id).toBe('evt_paid_a');
    await replayAndRecord('task-workflow-wait-for-event-matched', waitId);
  });

  test('a wait naming its sources is not ended by the matching event from another source, only by one from a named source', async () => {
    const refused = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'bad-wait-sources',
        triggers: [{ type: 'event', event_type: 'order.created' }],
        tasks: [{ type: 'wait_for_event', config: { event_type: 'order.paid', sources: [''], timeout: '1h' } }],
      },
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().errors[0].path).toBe('tasks[0].config.sources[0]');

    const registered = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'await-settlement',
        triggers: [{ type: 'event', event_type: 'order.booked' }],
        tasks: [
          {
            type: 'wait_for_event',
            config: { event_type: 'order.settled', sources: ['payments'], match: MATCH, timeout: '1h' },
          },
        ],
      },
    });
    expect(registered.statusCode, registered.body).toBe(201);
    const runF = await startWaitingRun('evt_booked_f', 'order.booked', 'F');

    // The same type and order from another source (any key allowed the type could send it): not a candidate.
    expect((await post(order('evt_settled_forged', 'order.settled', 'F'))).statusCode).toBe(202);
    const ignored = await waitFor('the forged event routed', async () => {
      const log = await getJson('/v1/events/evt_settled_forged');
      return log.routing_state === 'routed' ? log : undefined;
    });
    expect(ignored.waits).toEqual({ scan: null, resumed: [] });
    expect((await getJson(`/v1/runs/${runF}`)).tasks[0].wait.status).toBe('waiting');

    const settled = { ...order('evt_settled_payments', 'order.settled', 'F'), source: 'payments' };
    expect((await post(settled)).statusCode).toBe(202);
    const run = await runEnded(runF);
    expect(run.status).toBe('succeeded');
    expect(run.tasks[0].wait).toMatchObject({ status: 'matched', matched_event_id: 'evt_settled_payments' });
  });

  test('an event accepted before the wait began does not end it', async () => {
    await register('await-payment-late', '1h', 'order.placed');
    expect((await post(order('evt_paid_early', 'order.paid', 'E'))).statusCode).toBe(202);
    const runE = await startWaitingRun('evt_placed_e', 'order.placed', 'E');
    // The earlier event is routed (its one look at the open waits is done) and resumed no wait of this run.
    const early = await waitFor('the earlier event routed', async () => {
      const log = await getJson('/v1/events/evt_paid_early');
      return log.routing_state === 'routed' ? log : undefined;
    });
    expect(early.waits.resumed.filter((wait: { wait_id: string }) => wait.wait_id.includes(runE))).toEqual([]);
    expect((await getJson(`/v1/runs/${runE}`)).tasks[0].wait.status).toBe('waiting');
    await stack.api.server.inject({ method: 'POST', url: `/v1/runs/${runE}/cancel` });
    // Cancelling the run closes its wait.
    const cancelled = await waitFor('the wait closed by the cancellation', async () => {
      const run = await getJson(`/v1/runs/${runE}`);
      return run.status === 'cancelled' && run.tasks[0].wait.status === 'cancelled' ? run : undefined;
    });
    expect(cancelled.tasks[0].wait.closed_at).not.toBeNull();
  });

  test('a wait that times out gives the next task { status: timed_out }', async () => {
    await register('await-payment-briefly', '2s', 'order.requested');
    const runT = await startWaitingRun('evt_requested_t', 'order.requested', 'T');
    const run = await runEnded(runT);
    expect(run.status).toBe('succeeded');
    expect(run.tasks[0]).toMatchObject({
      status: 'succeeded',
      result: { status: 'timed_out' },
      wait: { status: 'timed_out', matched_event_id: null, signal: null },
    });
    // An ended wait keeps no copy of its run's trigger event (event retention then forgets it with the event).
    const copies = await stack.sql.query(`SELECT trigger_event FROM event_waits WHERE run_id = $1`, [runT]);
    expect(copies.rows).toEqual([{ trigger_event: null }]);
    expect(await seenByNextTask(runT)).toEqual({ status: 'timed_out' });
    // An event after the timeout finds nothing open.
    expect((await post(order('evt_paid_t', 'order.paid', 'T'))).statusCode).toBe(202);
    expect((await getJson('/v1/events/evt_paid_t')).waits.resumed).toEqual([]);
    await replayAndRecord('task-workflow-wait-for-event-timed-out', taskWorkflowId(runT, 'wait_for_event', 0));
  });

  test('one event examines at most 1,000 open waits, oldest first, a page at a time; the rest keep waiting; ended waits keep no trigger copy', async () => {
    // 1,001 open waits of rows the test writes itself (their task workflows do not exist: a signal finds them closed).
    await stack.sql.query(
      `INSERT INTO event_waits (wait_id, run_id, activity_id, task_index, event_type, match, trigger_event, expires_at)
       SELECT 'bulk-' || lpad(n::text, 4, '0'), gen_random_uuid(), gen_random_uuid(), 0, 'bulk.paid',
              'event.data.k == trigger.event.data.k',
              jsonb_build_object('event_id', 'bulk-trigger-' || n, 'event_type', 'bulk.created', 'source', 'shop',
                                 'occurred_at', '2026-03-01T09:00:00Z',
                                 'data', jsonb_build_object('k', CASE WHEN n IN (150, 1000, 1001) THEN 'hit' ELSE 'miss-' || n END)),
              now() + interval '1 hour'
       FROM generate_series(1, 1001) AS n`,
    );
    // One more whose timeout passed without its task closing it (no worker ran, or the workflow was terminated).
    await stack.sql.query(
      `INSERT INTO event_waits (wait_id, run_id, activity_id, task_index, event_type, match, registered_at, expires_at)
       VALUES ('bulk-expired', gen_random_uuid(), gen_random_uuid(), 0, 'bulk.paid', NULL,
               now() - interval '2 minutes', now() - interval '1 minute')`,
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await post({ ...order('evt_bulk_paid', 'bulk.paid', 'B'), data: { k: 'hit' } })).statusCode).toBe(202);
    const log = await waitFor('the bulk event routed', async () => {
      const event = await getJson('/v1/events/evt_bulk_paid');
      return event.routing_state === 'routed' ? event : undefined;
    });
    // Waits 150 (second page) and 1,000 (the last examined) matched; 1,001 is past the cap and still waits.
    expect(log.waits.scan).toMatchObject({ examined: 1_000, capped: true, matched: 2, errors: 0 });
    expect(log.waits.resumed.map((wait: { wait_id: string }) => wait.wait_id)).toEqual(['bulk-0150', 'bulk-1000']);
    const rows = await stack.sql.query(
      `SELECT wait_id, status, trigger_event IS NULL AS dropped FROM event_waits
       WHERE wait_id IN ('bulk-0149', 'bulk-0150', 'bulk-1000', 'bulk-1001', 'bulk-expired') ORDER BY wait_id`,
    );
    expect(rows.rows).toEqual([
      { wait_id: 'bulk-0149', status: 'waiting', dropped: false },
      { wait_id: 'bulk-0150', status: 'matched', dropped: true },
      { wait_id: 'bulk-1000', status: 'matched', dropped: true },
      { wait_id: 'bulk-1001', status: 'waiting', dropped: false },
      // Past its timeout: no event ends it (its task answers timed_out when it closes it).
      { wait_id: 'bulk-expired', status: 'waiting', dropped: true },
    ]);
    await stack.sql.query(
      `UPDATE event_waits SET status = 'cancelled' WHERE event_type = 'bulk.paid' AND status = 'waiting'`,
    );
  });

  test('an event of a type only expired waits are open for is not held for them', async () => {
    await stack.sql.query(
      `INSERT INTO event_waits (wait_id, run_id, activity_id, task_index, event_type, registered_at, expires_at)
       VALUES ('stale-wait', gen_random_uuid(), gen_random_uuid(), 0, 'stale.paid', now() - interval '2 minutes',
               now() - interval '1 minute')`,
    );
    expect((await post(order('evt_stale_paid', 'stale.paid', 'S'))).statusCode).toBe(202);
    // Stored routed by the accept itself (no route, no wait it could end), not pending for a scan.
    const stored = await stack.sql.query(
      `SELECT routing_state, routed_at = received_at AS at_accept FROM events WHERE event_id = 'evt_stale_paid'`,
    );
    expect(stored.rows).toEqual([{ routing_state: 'routed', at_accept: true }]);
    expect((await getJson('/v1/events/evt_stale_paid')).waits).toEqual({ scan: null, resumed: [] });
    expect((await stack.sql.query(`SELECT status FROM event_waits WHERE wait_id = 'stale-wait'`)).rows).toEqual([
      { status: 'waiting' },
    ]);
  });

  test('a run waiting while its worker stops is resumed by the event on a new worker', async () => {
    await register('await-payment-restart', '1h', 'order.opened');
    const runR = await startWaitingRun('evt_opened_r', 'order.opened', 'R');
    await stack.worker!.close();

    // No worker: the event is matched and the task signalled all the same (Temporal holds the signal).
    expect((await post(order('evt_paid_r', 'order.paid', 'R', { amount: 7 }))).statusCode).toBe(202);
    await waitFor('the match recorded', async () => {
      const log = await getJson('/v1/events/evt_paid_r');
      return log.waits.resumed[0]?.signal === 'delivered' ? log : undefined;
    });
    expect((await getJson(`/v1/runs/${runR}`)).status).toBe('running');

    const next = await createWorkerApp(stack.config, { logger: silentLogger, workflowBundle: await workflowBundle() });
    void next.run();
    try {
      const run = await runEnded(runR, 90_000);
      expect(run.status).toBe('succeeded');
      expect(run.tasks[0].result).toMatchObject({ event_id: 'evt_paid_r', data: { order_id: 'R', amount: 7 } });
      expect(await seenByNextTask(runR)).toMatchObject({ event_id: 'evt_paid_r' });
    } finally {
      await next.close();
    }
  }, 120_000);
});
