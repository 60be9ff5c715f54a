import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createWorkerApp, type WorkerApp } from '../apps/worker/src/worker-app';
import { silentLogger, startStack, waitFor, workflowBundle, type TestStack } from './harness';

/**
 * Priority (docs/pacing.md): runs carry their definition's Temporal priority,
 * and with a backlog on the task queue the engine hands out the high ones
 * first. Counted from the run records (the order the runs recorded
 * themselves and finished), not timed. Also: pacing fields out of range are a
 * 400 naming the field.
 */
const LOW_RUNS = 100;
const HIGH_RUNS = 10;

let stack: TestStack;
let worker: WorkerApp | undefined;

beforeAll(async () => {
  // No worker yet: the runs queue up in Temporal as a backlog.
  stack = await startStack({ worker: false });
}, 120_000);

afterAll(async () => {
  await worker?.close();
  await stack?.close();
}, 60_000);

async function register(payload: Record<string, unknown>) {
  return await stack.api.server.inject({ method: 'POST', url: '/v1/activities', payload });
}

async function post(eventType: string, eventId: string): Promise<void> {
  const posted = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/events',
    payload: { event_id: eventId, event_type: eventType, source: 'tests', occurred_at: '2026-03-01T09:00:00Z' },
  });
  expect(posted.statusCode, posted.body).toBe(202);
  expect(posted.json().runs[0].status).toBe('started');
}

describe('priority', () => {
  test('pacing and priority fields out of range are refused with a 400 naming the field, and nothing is stored', async () => {
    const base = { triggers: [{ type: 'event', event_type: 'bad.input' }], tasks: [{ type: 'noop' }] };
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ throttle: { limit: 0, period: '1s' } }, 'throttle.limit'],
      [{ throttle: { limit: 10_001, period: '1s' } }, 'throttle.limit'],
      [{ throttle: { limit: 10, period: '500ms' } }, 'throttle.period'],
      [{ throttle: { limit: 10, period: '8d' } }, 'throttle.period'],
      [{ throttle: { limit: 10, period: '1s', burst: 0 } }, 'throttle.burst'],
      [{ throttle: { limit: 10, period: '1s', key: 'data.' } }, 'throttle.key'],
      [{ rate_limit: { limit: 10, period: '1m', key: 'data.a +' } }, 'rate_limit.key'],
      [{ rate_limit: { limit: 0, period: '1m' } }, 'rate_limit.limit'],
      [{ priority: 0 }, 'priority'],
      [{ priority: 6 }, 'priority'],
    ];
    for (const [fields, field] of cases) {
      const refused = await register({ name: `bad-${field.replace(/\W/g, '-')}`, ...base, ...fields });
      expect(refused.statusCode, JSON.stringify(fields)).toBe(400);
      const errors = refused.json().errors as Array<{ path: string }>;
      expect(
        errors.map((error) => error.path),
        JSON.stringify(fields),
      ).toContain(field);
    }
    const listed = await stack.api.server.inject({ method: 'GET', url: '/v1/activities' });
    expect(listed.json().items).toHaveLength(0);
  });

  test('with a backlog of low-priority runs, high-priority runs started after them are executed and finish ahead of nearly all of them', async () => {
    for (const [name, priority] of [
      ['backlog', 5],
      ['live', 1],
    ] as const) {
      const created = await register({
        name,
        triggers: [{ type: 'event', event_type: `${name}.happened` }],
        tasks: [{ type: 'noop' }, { type: 'noop' }],
        priority,
      });
      expect(created.statusCode, created.body).toBe(201);
    }
    for (let i = 0; i < LOW_RUNS; i++) await post('backlog.happened', `low-${i}`);
    for (let i = 0; i < HIGH_RUNS; i++) await post('live.happened', `high-${i}`);

    // The run workflow carries the priority (task workflows inherit it from it).
    const connection = await Connection.connect({ address: stack.config.temporal.address });
    try {
      const client = new Client({ connection, namespace: stack.config.temporal.namespace });
      const { rows } = await stack.sql.query<{ workflow_id: string }>(
        `SELECT workflow_id FROM event_routes WHERE event_id = 'high-0'`,
      );
      const described = await client.workflow.getHandle(rows[0]!.workflow_id).describe();
      expect(described.priority?.priorityKey).toBe(1);
      expect(await described.staticSummary()).toContain('priority 1');
    } finally {
      await connection.close();
    }

    worker = await createWorkerApp(stack.config, { logger: silentLogger, workflowBundle: await workflowBundle() });
    void worker.run();
    await waitFor(
      'every run to finish',
      async () => {
        const { rows } = await stack.sql.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM activity_runs WHERE status = 'succeeded'`,
        );
        return rows[0]!.n === LOW_RUNS + HIGH_RUNS ? true : undefined;
      },
      300_000,
    );
    // Counted from the records: how many low-priority runs finished before the last high-priority one.
    const { rows } = await stack.sql.query<{ activity_name: string }>(
      `SELECT d.name AS activity_name FROM activity_runs r JOIN activity_definitions d ON d.id = r.activity_id
       ORDER BY r.finished_at, r.run_id`,
    );
    const lastHigh = rows.map((row) => row.activity_name).lastIndexOf('live');
    const lowsAhead = rows.slice(0, lastHigh).filter((row) => row.activity_name === 'backlog').length;
    // Without priority the high runs finish behind nearly the whole backlog (144 of 150 measured); with it, behind at most
    // what the worker's slots (10 workflow tasks at once) and the queue's partitions had already taken.
    expect(lowsAhead).toBeLessThanOrEqual(30);
  }, 420_000);
});
