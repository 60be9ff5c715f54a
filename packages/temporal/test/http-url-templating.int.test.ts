import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId, runIdFor } from '@activity-core/contracts';
import { startHttpTarget } from '../../../test/http-target';
import { startStack, type TestStack } from '../../../test/harness';

const ERP_TOKEN = `erp_${randomBytes(12).toString('hex')}`;

let stack: TestStack;
let target: Awaited<ReturnType<typeof startHttpTarget>>;
let activityId: string;

beforeAll(async () => {
  [stack, target] = await Promise.all([startStack({ env: { TASK_SECRET_ERP: ERP_TOKEN } }), startHttpTarget()]);
  const created = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/activities',
    payload: {
      name: 'refund-order',
      triggers: [{ type: 'event', event_type: 'order.refund_requested' }],
      tasks: [
        {
          type: 'http',
          config: {
            url: `${target.url}/api/v1/orders/{{event.data.order_id}}/refund`,
            headers: { Authorization: 'Bearer {{secrets.ERP}}' },
          },
          retry: { max_attempts: 3, initial_interval: '100ms' },
        },
      ],
    },
  });
  expect(created.statusCode, created.body).toBe(201);
  activityId = created.json().id as string;
});
afterAll(async () => {
  await stack?.close();
  await target?.close();
});

/** Posts a refund request for `orderId` and waits for its run to end. */
async function refund(
  eventId: string,
  orderId: string,
): Promise<{
  status: string;
  tasks: Array<{ status: string; attempt_count: number; error?: { type: string; message: string } }>;
}> {
  const posted = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/events',
    payload: {
      event_id: eventId,
      event_type: 'order.refund_requested',
      source: 'tests',
      occurred_at: '2026-03-01T09:00:00Z',
      data: { order_id: orderId },
    },
  });
  expect(posted.statusCode, posted.body).toBeLessThan(300);
  const workflowId = eventRunWorkflowId(activityId, eventId);
  await stack.client.workflow
    .getHandle(workflowId)
    .result()
    .catch(() => undefined);
  return (await stack.api.server.inject({ method: 'GET', url: `/v1/runs/${runIdFor(workflowId)}` })).json();
}

describe('event data in an http task url', () => {
  test.each([
    ['evt_traversal', '../../admin/users/7/delete?'],
    ['evt_encoded_traversal', '%2e%2e/%2e%2e/admin/users/7/delete?'],
    ['evt_backslash', '..\\..\\admin\\users\\7\\delete'],
    ['evt_query_and_fragment', '7?admin=1&x=2#'],
  ])(
    '%s: the secret-bearing request lands on the intended path, one segment long, and never on the attacker path',
    async (eventId, orderId) => {
      const run = await refund(eventId, orderId);
      expect(run.status).toBe('succeeded');

      const intended = `/api/v1/orders/${encodeURIComponent(orderId)}/refund`;
      const received = target.requests.filter((request) => request.url === intended);
      expect(received).toHaveLength(1);
      expect(received[0]!.headers.authorization).toBe(`Bearer ${ERP_TOKEN}`);
      // Parsed like a server would: the path keeps its prefix and its suffix, and the value is one segment.
      const url = new URL(received[0]!.url, 'http://target');
      expect(url.pathname.split('/')).toEqual(['', 'api', 'v1', 'orders', encodeURIComponent(orderId), 'refund']);
      expect(decodeURIComponent(url.pathname.split('/')[4]!)).toBe(orderId);
      expect(url.search).toBe('');

      for (const request of target.requests) {
        expect(new URL(request.url, 'http://target').pathname.startsWith('/api/v1/orders/'), request.url).toBe(true);
        expect(request.url).not.toMatch(/^\/api\/admin|^\/admin/);
      }
    },
  );

  test('a value that would make a ".." segment fails the task once, without retry, as template_error, and sends nothing', async () => {
    const before = target.requests.length;
    const run = await refund('evt_dotdot', '..');
    expect(run.status).toBe('failed');
    expect(run.tasks[0]).toMatchObject({
      status: 'failed',
      attempt_count: 1,
      error: { type: 'template_error', message: expect.stringContaining('path segment') },
    });
    expect(target.requests).toHaveLength(before);
  });

  test('an empty value, which would leave a "//" that servers collapse, fails the task as template_error and sends nothing', async () => {
    const before = target.requests.length;
    const run = await refund('evt_empty', '');
    expect(run.status).toBe('failed');
    expect(run.tasks[0]).toMatchObject({
      status: 'failed',
      attempt_count: 1,
      error: { type: 'template_error', message: expect.stringContaining('empty path segment') },
    });
    expect(target.requests).toHaveLength(before);
  });

  test('a backslash in the template separates segments, so a value after it cannot make a ".." that climbs out', async () => {
    const created = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'order-action',
        triggers: [{ type: 'event', event_type: 'order.action_requested' }],
        tasks: [
          {
            type: 'http',
            config: {
              url: `${target.url}/api/v1/orders/{{event.data.order_id}}\\{{event.data.action}}/run`,
              headers: { Authorization: 'Bearer {{secrets.ERP}}' },
            },
            retry: { max_attempts: 3, initial_interval: '100ms' },
          },
        ],
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    const act = async (eventId: string, action: string) => {
      const posted = await stack.api.server.inject({
        method: 'POST',
        url: '/v1/events',
        payload: {
          event_id: eventId,
          event_type: 'order.action_requested',
          source: 'tests',
          occurred_at: '2026-03-01T09:00:00Z',
          data: { order_id: '7', action },
        },
      });
      expect(posted.statusCode, posted.body).toBeLessThan(300);
      const workflowId = eventRunWorkflowId(created.json().id as string, eventId);
      await stack.client.workflow
        .getHandle(workflowId)
        .result()
        .catch(() => undefined);
      return (await stack.api.server.inject({ method: 'GET', url: `/v1/runs/${runIdFor(workflowId)}` })).json();
    };

    const before = target.requests.length;
    const climbing = await act('evt_backslash_dotdot', '..');
    expect(climbing.status).toBe('failed');
    expect(climbing.tasks[0]).toMatchObject({ status: 'failed', attempt_count: 1, error: { type: 'template_error' } });
    expect(target.requests).toHaveLength(before);

    const ordinary = await act('evt_backslash_ok', 'cancel');
    expect(ordinary.status).toBe('succeeded');
    expect(target.requests.slice(before).map((request) => request.url)).toEqual(['/api/v1/orders/7/cancel/run']);
  });
});
