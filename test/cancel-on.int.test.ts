import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startStack, waitFor, type TestStack } from './harness';

let stack: TestStack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

const MATCH = 'event.data.order_id == trigger.event.data.order_id';

const post = (payload: object) => stack.api.server.inject({ method: 'POST', url: '/v1/events', payload });
const order = (event_id: string, event_type: string, order_id: string) => ({
  event_id,
  event_type,
  source: 'shop',
  occurred_at: '2026-03-01T09:00:00Z',
  data: { order_id },
});
const getJson = async (url: string) => (await stack.api.server.inject({ method: 'GET', url })).json();

async function startRun(eventId: string, orderId: string, eventType = 'order.created'): Promise<string> {
  const response = await post(order(eventId, eventType, orderId));
  expect(response.statusCode, response.body).toBe(202);
  const runId: string = response.json().runs[0].run_id;
  await waitFor(`run ${runId} running`, async () =>
    (await getJson(`/v1/runs/${runId}`)).tasks?.length > 0 ? true : undefined,
  );
  return runId;
}

describe('cancel_on', () => {
  test('an invalid match expression is refused at registration with a 400 naming the field', async () => {
    for (const match of ['event.data.order_id ==', 'data.order_id == "A"', '"not a boolean"']) {
      const response = await stack.api.server.inject({
        method: 'POST',
        url: '/v1/activities',
        payload: {
          name: 'bad-cancel-on',
          triggers: [
            { type: 'event', event_type: 'order.created', cancel_on: [{ event_type: 'order.cancelled', match }] },
          ],
          tasks: [{ type: 'noop' }],
        },
      });
      expect(response.statusCode, match).toBe(400);
      expect(response.json().errors[0].path, match).toBe('triggers[0].cancel_on[0].match');
    }
  });

  test('a matching event cancels the running run of its order, a non-matching one cancels nothing, and a redelivery decides nothing new', async () => {
    const registered = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'fulfil-order',
        triggers: [
          { type: 'event', event_type: 'order.created', cancel_on: [{ event_type: 'order.cancelled', match: MATCH }] },
        ],
        tasks: [{ type: 'delay', config: { duration: '1h' } }],
      },
    });
    expect(registered.statusCode, registered.body).toBe(201);
    const activityId: string = registered.json().id;

    const runA = await startRun('evt_created_a', 'A');
    const runB = await startRun('evt_created_b', 'B');

    // Another order's cancellation: looked at both runs, cancelled neither.
    expect((await post(order('evt_cancel_z', 'order.cancelled', 'Z'))).statusCode).toBe(202);
    const other = await waitFor('the non-matching event routed', async () => {
      const log = await getJson('/v1/events/evt_cancel_z');
      return log.routing_state === 'routed' ? log : undefined;
    });
    expect(other.cancel_on.scans).toEqual([
      expect.objectContaining({ activity_id: activityId, examined: 2, matched: 0, capped: false, errors: 0 }),
    ]);
    expect(other.cancel_on.cancellations).toEqual([]);

    // Order A's cancellation stops A's run and only that one.
    expect((await post(order('evt_cancel_a', 'order.cancelled', 'A'))).statusCode).toBe(202);
    const cancelledRun = await waitFor('run A cancelled', async () => {
      const run = await getJson(`/v1/runs/${runA}`);
      return run.status === 'cancelled' ? run : undefined;
    });
    expect(cancelledRun.cancelled_by_event).toBe('evt_cancel_a');

    const log = await getJson('/v1/events/evt_cancel_a');
    expect(log.routing_state).toBe('routed');
    expect(log.cancel_on.scans).toEqual([
      expect.objectContaining({
        activity_id: activityId,
        activity_name: 'fulfil-order',
        examined: 2,
        matched: 1,
        capped: false,
        errors: 0,
      }),
    ]);
    expect(log.cancel_on.cancellations).toEqual([
      expect.objectContaining({
        activity_id: activityId,
        run_id: runA,
        outcome: 'cancel_requested',
        detail: `triggers[0].cancel_on[0] matched: ${MATCH}`,
      }),
    ]);

    const runBNow = await getJson(`/v1/runs/${runB}`);
    expect(runBNow.status).toBe('running');
    expect(runBNow.cancelled_by_event).toBeNull();

    // A redelivery of the cancel event is a duplicate: no new scan, no new decision.
    const again = await post(order('evt_cancel_a', 'order.cancelled', 'A'));
    expect(again.json().status).toBe('duplicate');
    const counts = await stack.sql.query(
      `SELECT (SELECT count(*)::int FROM event_cancel_scans WHERE event_id = 'evt_cancel_a') AS scans,
              (SELECT count(*)::int FROM event_cancellations WHERE event_id = 'evt_cancel_a') AS decisions`,
    );
    expect(counts.rows[0]).toEqual({ scans: 1, decisions: 1 });
    expect((await getJson('/v1/events/evt_cancel_a')).cancel_on).toEqual(log.cancel_on);

    // Clean up the long run.
    await stack.api.server.inject({ method: 'POST', url: `/v1/runs/${runB}/cancel` });
  });

  test('an entry naming its sources ignores the same cancellation from another source: nothing is scanned or cancelled', async () => {
    const refused = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'bad-cancel-sources',
        triggers: [
          {
            type: 'event',
            event_type: 'order.created',
            cancel_on: [{ event_type: 'order.cancelled', sources: [], match: MATCH }],
          },
        ],
        tasks: [{ type: 'noop' }],
      },
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().errors[0].path).toBe('triggers[0].cancel_on[0].sources');

    const registered = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'ship-order',
        triggers: [
          {
            type: 'event',
            event_type: 'order.shipped',
            cancel_on: [{ event_type: 'order.recalled', sources: ['warehouse', 'shop'], match: MATCH }],
          },
        ],
        tasks: [{ type: 'delay', config: { duration: '1h' } }],
      },
    });
    expect(registered.statusCode, registered.body).toBe(201);
    const runS = await startRun('evt_shipped_s', 'S', 'order.shipped');

    // The same type and order from a source the entry does not name (any key allowed the type could send it).
    const forged = { ...order('evt_recall_forged', 'order.recalled', 'S'), source: 'forger' };
    expect((await post(forged)).statusCode).toBe(202);
    const ignored = await waitFor('the forged event routed', async () => {
      const log = await getJson('/v1/events/evt_recall_forged');
      return log.routing_state === 'routed' ? log : undefined;
    });
    expect(ignored.cancel_on).toEqual({ scans: [], cancellations: [] });
    expect((await getJson(`/v1/runs/${runS}`)).status).toBe('running');

    // From a named source it cancels.
    expect((await post(order('evt_recall_shop', 'order.recalled', 'S'))).statusCode).toBe(202);
    const cancelled = await waitFor('run S cancelled', async () => {
      const run = await getJson(`/v1/runs/${runS}`);
      return run.status === 'cancelled' ? run : undefined;
    });
    expect(cancelled.cancelled_by_event).toBe('evt_recall_shop');
  });
});

describe('cancel_on and a concurrency limit', () => {
  test('a run queued for a concurrency slot is cancelled by a matching event and leaves the queue; the slot holder runs on', async () => {
    const registered = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'fulfil-order-one-at-a-time',
        triggers: [
          { type: 'event', event_type: 'order.placed', cancel_on: [{ event_type: 'order.withdrawn', match: MATCH }] },
        ],
        tasks: [{ type: 'delay', config: { duration: '1h' } }],
        concurrency: { limit: 1 },
      },
    });
    expect(registered.statusCode, registered.body).toBe(201);

    const runC = await startRun('evt_placed_c', 'C', 'order.placed');
    const queued = await post(order('evt_placed_d', 'order.placed', 'D'));
    expect(queued.statusCode, queued.body).toBe(202);
    const runD: string = queued.json().runs[0].run_id;
    await waitFor(`run ${runD} waiting for a slot`, async () =>
      (await getJson(`/v1/runs/${runD}`)).status === 'waiting_for_slot' ? true : undefined,
    );

    expect((await post(order('evt_withdrawn_d', 'order.withdrawn', 'D'))).statusCode).toBe(202);
    const cancelled = await waitFor('the queued run cancelled', async () => {
      const run = await getJson(`/v1/runs/${runD}`);
      return run.status === 'cancelled' ? run : undefined;
    });
    expect(cancelled.cancelled_by_event).toBe('evt_withdrawn_d');
    expect(cancelled.tasks).toEqual([]);
    const log = await getJson('/v1/events/evt_withdrawn_d');
    expect(log.cancel_on.scans).toEqual([expect.objectContaining({ examined: 2, matched: 1 })]);
    expect(log.cancel_on.cancellations).toEqual([
      expect.objectContaining({ run_id: runD, outcome: 'cancel_requested' }),
    ]);
    expect((await getJson(`/v1/runs/${runC}`)).status).toBe('running');

    // The cancelled run took no slot: once the holder ends, a new run gets the slot at once.
    await stack.api.server.inject({ method: 'POST', url: `/v1/runs/${runC}/cancel` });
    const runE = await startRun('evt_placed_e', 'E', 'order.placed');
    expect((await getJson(`/v1/runs/${runE}`)).status).toBe('running');
    await stack.api.server.inject({ method: 'POST', url: `/v1/runs/${runE}/cancel` });
  });
});
