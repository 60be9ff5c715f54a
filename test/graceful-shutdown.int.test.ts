import type { ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId, runIdFor } from '@activity-core/contracts';
import { freePort } from '@activity-core/dev-services';
import { createWorkerApp } from '../apps/worker/src/worker-app';
import { startHttpTarget } from './http-target';
import { silentLogger, startStack, waitFor, workflowBundle, type TestStack } from './harness';
import { killHard, spawnApiProcess, spawnWorkerProcess } from './worker-process';

/**
 * SIGTERM is an orderly stop, not a crash: the API finishes the requests it
 * has begun, a worker lets its running activities finish (within the grace
 * period) before it exits. Both are the real entry points in their own
 * processes.
 */
let stack: TestStack;

beforeAll(async () => {
  stack = await startStack({ worker: false });
});
afterAll(async () => {
  await stack?.close();
});

function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null)
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

describe('an orderly stop', () => {
  test('SIGTERM to a worker lets the http request in flight finish, so the task is not run a second time', async () => {
    let release: (() => void) | undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const target = await startHttpTarget(async (_request, index) => {
      // The first call is held until the worker has been told to stop.
      if (index === 0) await released;
      return { status: 200, body: { call: index } };
    });
    const worker = spawnWorkerProcess(stack.config);
    try {
      await worker.ready;
      const registered = await stack.api.server.inject({
        method: 'POST',
        url: '/v1/activities',
        payload: {
          name: 'drained-on-sigterm',
          triggers: [{ type: 'event', event_type: 'drain.checked' }],
          tasks: [
            { type: 'http', config: { url: `${target.url}/slow`, method: 'POST', timeout: '60s' } },
            { type: 'noop' },
          ],
        },
      });
      expect(registered.statusCode, registered.body).toBe(201);
      const activityId = (registered.json() as { id: string }).id;
      const posted = await stack.api.server.inject({
        method: 'POST',
        url: '/v1/events',
        payload: {
          event_id: 'evt_drain_1',
          event_type: 'drain.checked',
          source: 'test',
          occurred_at: '2026-03-01T09:00:00Z',
          data: {},
        },
      });
      expect(posted.statusCode, posted.body).toBe(202);
      await waitFor(
        'the http task to reach the target',
        async () => (target.requests.length > 0 ? true : undefined),
        60_000,
      );

      const exited = exitOf(worker.child);
      worker.child.kill('SIGTERM');
      // The worker is draining: the request is still open. Let it answer now.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(worker.exited()).toBeNull();
      release!();
      const { code } = await exited;
      expect(code, worker.output()).toBe(0);
      expect(worker.output()).toContain('worker stopped');

      // A new worker finishes the run; the http task is not repeated.
      const next = await createWorkerApp(stack.config, {
        logger: silentLogger,
        workflowBundle: await workflowBundle(),
      });
      void next.run();
      try {
        const runId = runIdFor(eventRunWorkflowId(activityId, 'evt_drain_1'));
        const run = await waitFor(
          'the run to succeed on the next worker',
          async () => {
            const response = await stack.api.server.inject({ method: 'GET', url: `/v1/runs/${runId}` });
            const body = response.json() as {
              status?: string;
              tasks?: Array<{ task_type: string; status: string; attempt_count?: number }>;
            };
            return body.status === 'succeeded' ? body : undefined;
          },
          60_000,
        );
        expect(run.tasks?.map((task) => task.status)).toEqual(['succeeded', 'succeeded']);
        expect(target.requests).toHaveLength(1);
        expect(run.tasks?.[0]?.attempt_count).toBe(1);
      } finally {
        await next.close();
      }
    } finally {
      release?.();
      await killHard(worker.child);
      await target.close();
    }
  });

  test('SIGTERM to the API finishes a request it has begun, refuses new connections, and exits 0', async () => {
    const port = await freePort();
    // A keep-alive timeout far longer than the test: only closing the connection lets the process exit in time.
    const api = spawnApiProcess(stack.config, port, {
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '600000',
      HTTP_REQUEST_TIMEOUT_MS: '600000',
      HTTP_HEADERS_TIMEOUT_MS: '60000',
    });
    try {
      await api.ready;
      const body = JSON.stringify({
        event_id: 'evt_in_flight_1',
        event_type: 'drain.api',
        source: 'test',
        occurred_at: '2026-03-01T09:00:00Z',
        data: { n: 1 },
      });
      const socket = connect({ host: '127.0.0.1', port });
      await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
      let answer = '';
      socket.on('data', (chunk: Buffer) => (answer += chunk.toString('utf8')));
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      // Headers and half the body: the request has begun.
      socket.write(
        `POST /v1/events HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`,
      );
      socket.write(body.slice(0, 40));
      await new Promise((resolve) => setTimeout(resolve, 300));

      const exited = exitOf(api.child);
      api.child.kill('SIGTERM');
      // Stopped accepting: a new connection is refused while the begun request is still open.
      await waitFor(
        'the listener to close',
        () =>
          new Promise<true | undefined>((resolve) => {
            const probe = connect({ host: '127.0.0.1', port });
            probe.once('connect', () => {
              probe.destroy();
              resolve(undefined);
            });
            probe.once('error', () => resolve(true));
          }),
        15_000,
      );
      expect(api.exited()).toBeNull();

      socket.write(body.slice(40));
      await closed.catch(() => undefined);
      await waitFor('the answer', async () => (answer.includes('\r\n\r\n') ? true : undefined), 15_000).catch(
        () => undefined,
      );
      expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 202 Accepted');
      // The connection ends with the answer instead of idling until the keep-alive timeout holds the exit up.
      expect(answer.toLowerCase()).toContain('\r\nconnection: close\r\n');
      const { code } = await exited;
      expect(code, api.output()).toBe(0);

      const stored = await stack.sql.query('SELECT event_id FROM events WHERE event_id = $1', ['evt_in_flight_1']);
      expect(stored.rowCount).toBe(1);
    } finally {
      await killHard(api.child);
    }
  });
});
