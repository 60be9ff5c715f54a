import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId, runIdFor } from '@activity-core/contracts';
import { startHttpTarget } from '../../../test/http-target';
import { startStack, type TestStack } from '../../../test/harness';

// A service on the worker's own host, answering what an internal endpoint would.
let target: Awaited<ReturnType<typeof startHttpTarget>>;
/** The default policy: HTTP_TASK_EGRESS_ALLOW unset. */
let denying: TestStack;
/** Loopback opted in, as test/harness.ts does for every other test. */
let allowing: TestStack;

beforeAll(async () => {
  [target, denying, allowing] = await Promise.all([
    startHttpTarget(() => ({ status: 200, body: { internal: 'do-not-leak' } })),
    startStack({ env: { HTTP_TASK_EGRESS_ALLOW: '' } }),
    startStack({ env: { HTTP_TASK_EGRESS_ALLOW: '127.0.0.0/8,::1/128' } }),
  ]);
});
afterAll(async () => {
  await Promise.all([denying?.close(), allowing?.close()]);
  await target?.close();
});

const port = (): string => new URL(target.url).port;

/** Registers one http task to `url` on `stack`, triggers it and returns the finished run. */
async function runHttpTask(stack: TestStack, name: string, url: string) {
  const created = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/activities',
    payload: {
      name,
      triggers: [{ type: 'event', event_type: `${name}.go` }],
      tasks: [{ type: 'http', config: { method: 'GET', url }, retry: { max_attempts: 3, initial_interval: '100ms' } }],
    },
  });
  expect(created.statusCode, created.body).toBe(201);
  const eventId = `evt_${name}`;
  const posted = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/events',
    payload: {
      event_id: eventId,
      event_type: `${name}.go`,
      source: 'tests',
      occurred_at: '2026-03-01T09:00:00Z',
      data: {},
    },
  });
  expect(posted.statusCode, posted.body).toBeLessThan(300);
  const workflowId = eventRunWorkflowId(created.json().id as string, eventId);
  await stack.client.workflow
    .getHandle(workflowId)
    .result()
    .catch(() => undefined);
  const run = await stack.api.server.inject({ method: 'GET', url: `/v1/runs/${runIdFor(workflowId)}` });
  return { run: run.json(), text: run.body };
}

describe('http task egress', () => {
  test.each([
    ['literal', () => `http://127.0.0.1:${port()}/internal/literal`, '127.0.0.1, a loopback address'],
    ['resolved', () => `http://localhost:${port()}/internal/resolved`, 'localhost resolves to'],
    // On an IPv6-only cluster with DNS64/NAT64 this address is 127.0.0.1; it is judged as that.
    ['nat64', () => `http://[64:ff9b::7f00:1]:${port()}/internal/nat64`, 'a loopback (127.0.0.1 via NAT64) address'],
  ])(
    'by default a task to a loopback address (%s) fails once, without retry, as egress_denied, and the target is never reached',
    async (name, url, says) => {
      const { run, text } = await runHttpTask(denying, `egress-denied-${name}`, url());
      expect(run.status).toBe('failed');
      expect(run.tasks[0]).toMatchObject({
        status: 'failed',
        attempt_count: 1,
        error: { type: 'egress_denied', message: expect.stringContaining(says) },
      });
      expect(run.tasks[0].error.message).toContain('HTTP_TASK_EGRESS_ALLOW');
      expect(text).not.toContain('do-not-leak');
      expect(target.requests.filter((request) => request.url.startsWith('/internal/'))).toEqual([]);
    },
  );

  test('with loopback allowed, the same tasks reach the target by address and by name', async () => {
    const byAddress = await runHttpTask(
      allowing,
      'egress-allowed-literal',
      `http://127.0.0.1:${port()}/allowed/literal`,
    );
    const byName = await runHttpTask(
      allowing,
      'egress-allowed-resolved',
      `http://localhost:${port()}/allowed/resolved`,
    );
    expect(byAddress.run.status).toBe('succeeded');
    expect(byName.run.status).toBe('succeeded');
    expect(byAddress.run.tasks[0].result).toEqual({ status: 200, body: { internal: 'do-not-leak' } });
    expect(
      target.requests
        .map((request) => request.url)
        .filter((url) => url.startsWith('/allowed/'))
        .sort(),
    ).toEqual(['/allowed/literal', '/allowed/resolved']);
  });
});

describe('hostile response bodies', () => {
  test('a target answering JSON nested 5,000 levels deep does not crash the task: the run succeeds with the body as text', async () => {
    const deep = `${'['.repeat(5_000)}${']'.repeat(5_000)}`;
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(deep);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port: deepPort } = server.address() as AddressInfo;
      const { run } = await runHttpTask(allowing, 'deep-body', `http://127.0.0.1:${deepPort}/deep`);
      expect(run.status).toBe('succeeded');
      expect(run.tasks[0]).toMatchObject({
        status: 'succeeded',
        attempt_count: 1,
        result: { status: 200, body: deep },
      });
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
