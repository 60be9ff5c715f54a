import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  concurrencyCoordinatorWorkflowId,
  eventRunWorkflowId,
  runIdFor,
  taskWorkflowId,
} from '@activity-core/contracts';
import { recordGoldenHistory } from './golden-histories';
import { startHttpTarget, type RecordedRequest } from './http-target';
import { startStack, waitFor, type TestStack } from './harness';
import { killHard, spawnWorkerProcess } from './worker-process';

/**
 * An http target that holds every request until the test opens the gate, and
 * records how many requests of each key were in flight at once.
 */
async function startGatedTarget() {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const inFlight = new Map<string, number>();
  const maxInFlight = new Map<string, number>();
  const keyOf = (request: RecordedRequest) => new URL(request.url, 'http://x').searchParams.get('key') ?? '';
  const target = await startHttpTarget(async (request) => {
    const key = keyOf(request);
    const now = (inFlight.get(key) ?? 0) + 1;
    inFlight.set(key, now);
    maxInFlight.set(key, Math.max(now, maxInFlight.get(key) ?? 0));
    await gate;
    inFlight.set(key, (inFlight.get(key) ?? 1) - 1);
    return { status: 200, body: { ok: true } };
  });
  return {
    target,
    open,
    inFlight: (key: string) => inFlight.get(key) ?? 0,
    maxInFlight: (key: string) => maxInFlight.get(key) ?? 0,
    eventsCalled: () => target.requests.map((r) => new URL(r.url, 'http://x').searchParams.get('event')),
  };
}

async function register(
  stack: TestStack,
  name: string,
  url: string,
  concurrency: Record<string, unknown>,
  timeout = '15m',
): Promise<string> {
  const created = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/activities',
    payload: {
      name,
      triggers: [{ type: 'event', event_type: `${name}.happened` }],
      // A short timeout where a worker dies mid-request: Temporal retries the attempt once it times out.
      tasks: [
        {
          type: 'http',
          config: { url: `${url}?event={{event.event_id}}&key={{event.data.customer}}`, timeout },
          retry: { max_attempts: 5, initial_interval: '100ms' },
        },
      ],
      concurrency,
    },
  });
  expect(created.statusCode, created.body).toBe(201);
  return created.json().id as string;
}

async function post(stack: TestStack, name: string, eventId: string, customer = 'acme'): Promise<void> {
  const posted = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/events',
    payload: {
      event_id: eventId,
      event_type: `${name}.happened`,
      source: 'tests',
      occurred_at: '2026-03-01T09:00:00Z',
      data: { customer },
    },
  });
  expect(posted.statusCode, posted.body).toBe(202);
}

async function statusOf(stack: TestStack, activityId: string, eventId: string): Promise<string | undefined> {
  const rows = await stack.sql.query('SELECT status FROM activity_runs WHERE workflow_id = $1', [
    eventRunWorkflowId(activityId, eventId),
  ]);
  return rows.rows[0]?.status as string | undefined;
}

const untilStatus = (stack: TestStack, activityId: string, eventId: string, status: string) =>
  waitFor(`${eventId} to be ${status}`, async () =>
    (await statusOf(stack, activityId, eventId)) === status ? true : undefined,
  );

const resultOf = (stack: TestStack, activityId: string, eventId: string) =>
  stack.client.workflow.getHandle(eventRunWorkflowId(activityId, eventId)).result();

describe('concurrency limits on one worker', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack?.close();
  });

  test('with limit 1, three runs execute one after another in the order their events arrived', async () => {
    const gated = await startGatedTarget();
    try {
      const id = await register(stack, 'conc-fifo', `${gated.target.url}/work`, { limit: 1 });
      await post(stack, 'conc-fifo', 'fifo-1');
      await waitFor('the first run to call the target', async () =>
        gated.target.requests.length === 1 ? true : undefined,
      );
      await post(stack, 'conc-fifo', 'fifo-2');
      await untilStatus(stack, id, 'fifo-2', 'waiting_for_slot');
      await post(stack, 'conc-fifo', 'fifo-3');
      await untilStatus(stack, id, 'fifo-3', 'waiting_for_slot');
      const listed = await stack.api.server.inject({
        method: 'GET',
        url: `/v1/runs?activity_id=${id}&status=waiting_for_slot`,
      });
      expect(listed.json().items).toHaveLength(2);
      gated.open();
      for (const eventId of ['fifo-1', 'fifo-2', 'fifo-3'])
        expect(await resultOf(stack, id, eventId)).toMatchObject({ status: 'succeeded' });
      expect(gated.eventsCalled()).toEqual(['fifo-1', 'fifo-2', 'fifo-3']);
      expect(gated.maxInFlight('acme')).toBe(1);
      for (const eventId of ['fifo-1', 'fifo-2', 'fifo-3'])
        expect(await statusOf(stack, id, eventId)).toBe('succeeded');
      // Golden histories of the queued shape (see recordGoldenHistory): a run that waited, and its coordinator.
      const waited = stack.client.workflow.getHandle(eventRunWorkflowId(id, 'fifo-2'));
      await recordGoldenHistory('run-activity-workflow-queued', await waited.fetchHistory(), waited.workflowId);
      const coordinator = stack.client.workflow.getHandle(concurrencyCoordinatorWorkflowId(id, ''));
      await recordGoldenHistory('concurrency-coordinator', await coordinator.fetchHistory(), coordinator.workflowId);
    } finally {
      gated.open();
      await gated.target.close();
    }
  });

  test('with limit 2 and key data.customer, each customer has its own two slots', async () => {
    const gated = await startGatedTarget();
    try {
      const id = await register(stack, 'conc-keyed', `${gated.target.url}/work`, { limit: 2, key: 'data.customer' });
      for (const eventId of ['acme-1', 'acme-2', 'acme-3']) await post(stack, 'conc-keyed', eventId, 'acme');
      await post(stack, 'conc-keyed', 'globex-1', 'globex');
      // Two acme runs and the globex run are in flight at once; the third acme run waits.
      await waitFor('three runs in flight', async () =>
        gated.inFlight('acme') === 2 && gated.inFlight('globex') === 1 ? true : undefined,
      );
      // One acme run waits. Which one is the order the three requests reached the coordinator:
      // runs started moments apart may reach it in either order (docs/concurrency.md).
      await waitFor('one acme run to wait for a slot', async () => {
        const statuses = await Promise.all(['acme-1', 'acme-2', 'acme-3'].map((e) => statusOf(stack, id, e)));
        return statuses.filter((status) => status === 'waiting_for_slot').length === 1 ? true : undefined;
      });
      gated.open();
      for (const eventId of ['acme-1', 'acme-2', 'acme-3', 'globex-1'])
        expect(await resultOf(stack, id, eventId)).toMatchObject({ status: 'succeeded' });
      expect(gated.maxInFlight('acme')).toBe(2);
      expect(gated.maxInFlight('globex')).toBe(1);
    } finally {
      gated.open();
      await gated.target.close();
    }
  });

  test('with on_limit skip, a run over the limit is recorded as skipped with the reason, visible in the API', async () => {
    const gated = await startGatedTarget();
    try {
      const id = await register(stack, 'conc-skip', `${gated.target.url}/work`, { limit: 1, on_limit: 'skip' });
      await post(stack, 'conc-skip', 'skip-1');
      await waitFor('the first run to call the target', async () =>
        gated.target.requests.length === 1 ? true : undefined,
      );
      await post(stack, 'conc-skip', 'skip-2');
      expect(await resultOf(stack, id, 'skip-2')).toMatchObject({ status: 'skipped', tasks: [] });
      const run = await stack.api.server.inject({
        method: 'GET',
        url: `/v1/runs/${runIdFor(eventRunWorkflowId(id, 'skip-2'))}`,
      });
      expect(run.statusCode).toBe(200);
      expect(run.json()).toMatchObject({
        status: 'skipped',
        error: {
          type: 'concurrency_limit',
          message: 'the concurrency limit of 1 was reached (1 running); on_limit is skip',
        },
      });
      gated.open();
      expect(await resultOf(stack, id, 'skip-1')).toMatchObject({ status: 'succeeded' });
      expect(gated.eventsCalled()).toEqual(['skip-1']);
    } finally {
      gated.open();
      await gated.target.close();
    }
  });

  test('a holder terminated from Temporal has its slot reclaimed and the next run starts', async () => {
    const gated = await startGatedTarget();
    try {
      const id = await register(stack, 'conc-terminate', `${gated.target.url}/work`, { limit: 1 });
      await post(stack, 'conc-terminate', 'term-1');
      await waitFor('the first run to call the target', async () =>
        gated.target.requests.length === 1 ? true : undefined,
      );
      await post(stack, 'conc-terminate', 'term-2');
      await untilStatus(stack, id, 'term-2', 'waiting_for_slot');
      await stack.client.workflow.getHandle(eventRunWorkflowId(id, 'term-1')).terminate('operator stopped it');
      // The holder never releases; the coordinator's watchdog (every 10 s) finds it closed.
      await waitFor(
        'the second run to start',
        async () => (gated.eventsCalled().includes('term-2') ? true : undefined),
        45_000,
      );
      expect(await statusOf(stack, id, 'term-2')).toBe('running');
      await stack.client.workflow.getHandle(eventRunWorkflowId(id, 'term-2')).terminate('test over');
      // Leave nothing in flight: the terminated runs' task workflows are cancelled and record it.
      gated.open();
      for (const eventId of ['term-1', 'term-2']) {
        const task = stack.client.workflow.getHandle(
          taskWorkflowId(runIdFor(eventRunWorkflowId(id, eventId)), 'http', 0),
        );
        await waitFor(`the task of ${eventId} to close`, async () =>
          (await task.describe()).status.name === 'RUNNING' ? undefined : true,
        );
      }
    } finally {
      gated.open();
      await gated.target.close();
    }
  }, 90_000);

  test('a key expression that fails on an event fails that run with the reason and takes no slot', async () => {
    const gated = await startGatedTarget();
    try {
      const created = await stack.api.server.inject({
        method: 'POST',
        url: '/v1/activities',
        payload: {
          name: 'conc-key-error',
          triggers: [{ type: 'event', event_type: 'conc-key-error.happened' }],
          tasks: [{ type: 'noop' }],
          concurrency: { limit: 1, key: 'data.tenant' },
        },
      });
      const id = created.json().id as string;
      await post(stack, 'conc-key-error', 'key-error-1');
      await expect(resultOf(stack, id, 'key-error-1')).rejects.toThrow();
      const run = await stack.api.server.inject({
        method: 'GET',
        url: `/v1/runs/${runIdFor(eventRunWorkflowId(id, 'key-error-1'))}`,
      });
      expect(run.json()).toMatchObject({
        status: 'failed',
        error: { type: 'concurrency_key_error', message: expect.stringContaining('tenant') },
      });
    } finally {
      gated.open();
      await gated.target.close();
    }
  });

  test('a definition with a key expression that does not compile is refused with a 400 naming the field', async () => {
    const created = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'conc-bad-key',
        triggers: [{ type: 'event', event_type: 'x.y' }],
        tasks: [{ type: 'noop' }],
        concurrency: { limit: 1, key: 'event.data.customer' },
      },
    });
    expect(created.statusCode).toBe(400);
    expect(created.body).toContain('concurrency');
    expect(created.body).toContain("unknown variable 'event'");
  });
});

describe('concurrency limits across a worker crash', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack({ worker: false });
  });
  afterAll(async () => {
    await stack?.close();
  });

  test('a worker killed while runs wait for a slot: all runs complete, never more than the limit at once', async () => {
    const gated = await startGatedTarget();
    const first = spawnWorkerProcess(stack.config);
    try {
      await first.ready;
      const id = await register(stack, 'conc-crash', `${gated.target.url}/work`, { limit: 1 }, '3s');
      await post(stack, 'conc-crash', 'crash-1');
      await waitFor('the first run to call the target', async () =>
        gated.target.requests.length === 1 ? true : undefined,
      );
      await post(stack, 'conc-crash', 'crash-2');
      await post(stack, 'conc-crash', 'crash-3');
      await untilStatus(stack, id, 'crash-2', 'waiting_for_slot');
      await untilStatus(stack, id, 'crash-3', 'waiting_for_slot');
      await killHard(first.child);
      gated.open();
      const second = spawnWorkerProcess(stack.config);
      try {
        await second.ready;
        for (const eventId of ['crash-1', 'crash-2', 'crash-3'])
          expect(await resultOf(stack, id, eventId)).toMatchObject({ status: 'succeeded' });
      } finally {
        await killHard(second.child);
      }
      expect(gated.maxInFlight('acme')).toBe(1);
      expect([...new Set(gated.eventsCalled())].sort()).toEqual(['crash-1', 'crash-2', 'crash-3']);
      for (const eventId of ['crash-1', 'crash-2', 'crash-3'])
        expect(await statusOf(stack, id, eventId)).toBe('succeeded');
    } finally {
      await killHard(first.child);
      gated.open();
      await gated.target.close();
    }
  }, 120_000);
});

describe('a concurrency queue with a byte bound', () => {
  // `activity-{uuid}:bound-N` is 53 bytes, 56 in the queue's JSON: two runs fit in 120 bytes, a third does not.
  const QUEUE_MAX_BYTES = 120;
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack({ env: { CONCURRENCY_QUEUE_MAX_BYTES: String(QUEUE_MAX_BYTES) } });
  });
  afterAll(async () => {
    await stack?.close();
  });

  test('a run that would take the queue past its bound is skipped with the reason, visible in the API; the queued runs still run', async () => {
    const gated = await startGatedTarget();
    try {
      const id = await register(stack, 'conc-bound', `${gated.target.url}/work`, { limit: 1 });
      await post(stack, 'conc-bound', 'bound-1');
      await waitFor('the first run to call the target', async () =>
        gated.target.requests.length === 1 ? true : undefined,
      );
      for (const eventId of ['bound-2', 'bound-3']) {
        await post(stack, 'conc-bound', eventId);
        await untilStatus(stack, id, eventId, 'waiting_for_slot');
      }
      await post(stack, 'conc-bound', 'bound-4');
      expect(await resultOf(stack, id, 'bound-4')).toMatchObject({ status: 'skipped', tasks: [] });
      const run = await stack.api.server.inject({
        method: 'GET',
        url: `/v1/runs/${runIdFor(eventRunWorkflowId(id, 'bound-4'))}`,
      });
      expect(run.json()).toMatchObject({
        status: 'skipped',
        error: {
          type: 'concurrency_limit',
          message: `the concurrency limit of 1 was reached (1 running) and its queue is full: 2 runs wait (112 of at most ${QUEUE_MAX_BYTES} bytes of run ids)`,
        },
      });
      gated.open();
      for (const eventId of ['bound-1', 'bound-2', 'bound-3'])
        expect(await resultOf(stack, id, eventId)).toMatchObject({ status: 'succeeded' });
      expect(gated.eventsCalled()).toEqual(['bound-1', 'bound-2', 'bound-3']);
      // The coordinator's shape with the bound (its patch marker): a golden history of its own.
      const coordinator = stack.client.workflow.getHandle(concurrencyCoordinatorWorkflowId(id, ''));
      await recordGoldenHistory('concurrency-coordinator', await coordinator.fetchHistory(), coordinator.workflowId);
    } finally {
      gated.open();
      await gated.target.close();
    }
  });
});
