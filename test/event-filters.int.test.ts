import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startStack, type TestStack } from './harness';
import { eventRunWorkflowId } from '@activity-core/contracts/ids';

let stack: TestStack;

beforeAll(async () => {
  stack = await startStack({ worker: false });
});
afterAll(async () => {
  await stack?.close();
});

async function register(name: string, filter: string, eventType = 'order.paid'): Promise<string> {
  const response = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/activities',
    payload: { name, triggers: [{ type: 'event', event_type: eventType, filter }], tasks: [{ type: 'noop' }] },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().id;
}

const post = (payload: object) => stack.api.server.inject({ method: 'POST', url: '/v1/events', payload });
const order = (event_id: string, data: object, event_type = 'order.paid') => ({
  event_id,
  event_type,
  source: 'shop',
  occurred_at: '2026-03-01T09:00:00Z',
  data,
});

async function executionExists(workflowId: string): Promise<boolean> {
  try {
    await stack.client.workflow.getHandle(workflowId).describe();
    return true;
  } catch {
    return false;
  }
}

describe('event trigger filters', () => {
  test('an invalid filter expression is refused at registration with a 400 naming the field', async () => {
    for (const filter of ['data.amount >', 'amount > 1', 'data.name.matches("(")', '"not a boolean"']) {
      const response = await stack.api.server.inject({
        method: 'POST',
        url: '/v1/activities',
        payload: {
          name: 'bad-filter',
          triggers: [{ type: 'event', event_type: 'x.y', filter }],
          tasks: [{ type: 'noop' }],
        },
      });
      expect(response.statusCode, filter).toBe(400);
      expect(response.json().errors[0].path, filter).toBe('triggers[0].filter');
    }
    expect(
      (await stack.sql.query(`SELECT count(*)::int AS n FROM activity_definitions WHERE name = 'bad-filter'`)).rows[0]
        .n,
    ).toBe(0);
  });

  test('one event: a filter that matches starts a run, one that does not is recorded as filtered, one that fails is recorded as filter_error', async () => {
    const matching = await register('big-orders', 'data.amount > 100');
    const notMatching = await register('huge-orders', 'data.amount > 1000');
    const failing = await register('gold-customers', 'data.customer.tier == "gold"');

    const response = await post(order('evt_filters_1', { amount: 250 }));
    expect(response.statusCode).toBe(202);
    const body = response.json();
    expect(body.runs).toEqual([expect.objectContaining({ activity_id: matching, status: 'started' })]);
    expect(body.filtered).toEqual(
      expect.arrayContaining([
        {
          activity_id: notMatching,
          activity_name: 'huge-orders',
          status: 'filtered',
          detail: 'filter `data.amount > 1000` is false',
        },
        {
          activity_id: failing,
          activity_name: 'gold-customers',
          status: 'filter_error',
          detail: expect.stringContaining('customer'),
        },
      ]),
    );

    // The decision log answers "why didn't this run".
    const log = (await stack.api.server.inject({ method: 'GET', url: '/v1/events/evt_filters_1' })).json();
    expect(log.routing_state).toBe('routed');
    const byActivity = Object.fromEntries(log.routes.map((r: { activity_id: string }) => [r.activity_id, r]));
    expect(byActivity[matching]).toMatchObject({ outcome: 'started', detail: null });
    expect(byActivity[notMatching]).toMatchObject({
      outcome: 'filtered',
      detail: 'filter `data.amount > 1000` is false',
    });
    expect(byActivity[failing]).toMatchObject({
      outcome: 'filter_error',
      detail: expect.stringMatching(/^filter `data.customer.tier == "gold"` failed: .*customer/),
    });

    // Only the matching activity has a run.
    expect(await executionExists(eventRunWorkflowId(matching, 'evt_filters_1'))).toBe(true);
    expect(await executionExists(eventRunWorkflowId(notMatching, 'evt_filters_1'))).toBe(false);
    expect(await executionExists(eventRunWorkflowId(failing, 'evt_filters_1'))).toBe(false);

    // A redelivery answers with the first decision.
    const again = (await post(order('evt_filters_1', { amount: 250 }))).json();
    expect(again.status).toBe('duplicate');
    expect(again.filtered.map((f: { status: string }) => f.status).sort()).toEqual(['filter_error', 'filtered']);
  });

  test('filters see the whole envelope', async () => {
    const id = await register(
      'eu-subjects',
      'source == "shop" && subject.startsWith("eu/") && occurred_at >= timestamp("2026-01-01T00:00:00Z")',
      'order.shipped',
    );
    const eu = (await post({ ...order('evt_filters_eu', {}, 'order.shipped'), subject: 'eu/42' })).json();
    const us = (await post({ ...order('evt_filters_us', {}, 'order.shipped'), subject: 'us/42' })).json();
    expect(eu.runs).toEqual([expect.objectContaining({ activity_id: id, status: 'started' })]);
    expect(us.runs).toEqual([]);
    expect(us.filtered).toEqual([expect.objectContaining({ activity_id: id, status: 'filtered' })]);
  });

  test('a filter that would take too long is stopped by its cost budget and recorded, and the API keeps answering', async () => {
    const id = await register('quadratic', 'data.items.all(a, data.items.all(b, a == b || a != b))', 'order.bulk');
    const items = Array.from({ length: 3_000 }, (_, i) => i);
    const started = Date.now();
    const response = await post(order('evt_filters_cost', { items }, 'order.bulk'));
    const elapsed = Date.now() - started;
    expect(response.statusCode).toBe(202);
    expect(response.json().filtered).toEqual([
      expect.objectContaining({
        activity_id: id,
        status: 'filter_error',
        detail: expect.stringContaining('cost limit'),
      }),
    ]);
    expect(elapsed).toBeLessThan(3_000);
    expect((await stack.api.server.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });

  test('a backtracking-prone pattern runs in linear time', async () => {
    const id = await register('regex', 'data.s.matches("^(a+)+$")', 'order.regex');
    const started = Date.now();
    const response = await post(order('evt_filters_regex', { s: `${'a'.repeat(50_000)}!` }, 'order.regex'));
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(response.json().filtered).toEqual([expect.objectContaining({ activity_id: id, status: 'filtered' })]);
  });
});
