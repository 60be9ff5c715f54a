import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createWorkerApp, type WorkerApp } from '../apps/worker/src/worker-app';
import { silentLogger, startStack, waitFor, workflowBundle, type TestStack } from './harness';

/**
 * Fairness (docs/pacing.md, "Fairness"): every run carries a Temporal fairness
 * key — its activity's id, or its definition's `fairness.key` over its event —
 * and the dev server runs with `matching.enableFairness`, so within one
 * priority a key with a few runs is not held behind another key's backlog.
 * Counted from the run records (which runs finished before which), not timed.
 */
const BIG = 60;
const SMALL = 6;

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

async function register(payload: Record<string, unknown>): Promise<string> {
  const created = await stack.api.server.inject({ method: 'POST', url: '/v1/activities', payload });
  expect(created.statusCode, created.body).toBe(201);
  return created.json().id as string;
}

async function post(eventType: string, eventId: string, data: Record<string, unknown> = {}): Promise<void> {
  const posted = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/events',
    payload: { event_id: eventId, event_type: eventType, source: 'tests', occurred_at: '2026-03-01T09:00:00Z', data },
  });
  expect(posted.statusCode, posted.body).toBe(202);
  expect(posted.json().runs[0].status).toBe('started');
}

/** How many runs whose event id starts with `big` finished before the last one whose event id starts with `small`. */
function aheadOfLast(order: string[], big: string, small: string): number {
  const lastSmall = order.findLastIndex((id) => id.startsWith(small));
  expect(lastSmall).toBeGreaterThanOrEqual(0);
  return order.slice(0, lastSmall).filter((id) => id.startsWith(big)).length;
}

describe('fairness', () => {
  test('fairness fields out of range or not compiling are refused with a 400 naming the field', async () => {
    const base = { triggers: [{ type: 'event', event_type: 'bad.input' }], tasks: [{ type: 'noop' }] };
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ fairness: { key: 'data.' } }, 'fairness.key'],
      [{ fairness: { weight: 0 } }, 'fairness.weight'],
      [{ fairness: { weight: 1001 } }, 'fairness.weight'],
      [{ fairness: { weight: 'heavy' } }, 'fairness.weight'],
      [{ fairness: { tenant: 'data.tenant' } }, 'fairness'],
    ];
    for (const [fields, field] of cases) {
      const refused = await stack.api.server.inject({
        method: 'POST',
        url: '/v1/activities',
        payload: { name: `bad-${field.replace(/\W/g, '-')}`, ...base, ...fields },
      });
      expect(refused.statusCode, JSON.stringify(fields)).toBe(400);
      const paths = (refused.json().errors as Array<{ path: string }>).map((error) => error.path);
      expect(
        paths.some((path) => path.startsWith(field)),
        `${JSON.stringify(fields)}: ${paths.join(', ')}`,
      ).toBe(true);
    }
    const listed = await stack.api.server.inject({ method: 'GET', url: '/v1/activities' });
    expect(listed.json().items).toHaveLength(0);
  });

  test("with a backlog for one fairness key, the few runs of another key are not all behind it: per tenant by the definition's key, per activity by default", async () => {
    // Per tenant: one activity, keyed by the event's tenant.
    const tenantsId = await register({
      name: 'tenant-sync',
      triggers: [{ type: 'event', event_type: 'tenant.changed' }],
      tasks: [{ type: 'noop' }, { type: 'noop' }],
      fairness: { key: 'data.tenant' },
    });
    // Per activity (no fairness field): each activity is its own key.
    const importId = await register({
      name: 'bulk-import',
      triggers: [{ type: 'event', event_type: 'import.row' }],
      tasks: [{ type: 'noop' }, { type: 'noop' }],
    });
    const ordersId = await register({
      name: 'orders',
      triggers: [{ type: 'event', event_type: 'order.paid' }],
      tasks: [{ type: 'noop' }, { type: 'noop' }],
    });
    // Arrival order: each backlog first, then the few runs of the other key.
    for (let i = 0; i < BIG; i++) await post('tenant.changed', `big-${i}`, { tenant: 'big-tenant' });
    for (let i = 0; i < SMALL; i++) await post('tenant.changed', `small-${i}`, { tenant: 'small-tenant' });
    for (let i = 0; i < BIG; i++) await post('import.row', `import-${i}`);
    for (let i = 0; i < SMALL; i++) await post('order.paid', `order-${i}`);

    // Every run workflow carries its fairness key (its task workflows inherit it).
    const connection = await Connection.connect({ address: stack.config.temporal.address });
    try {
      const client = new Client({ connection, namespace: stack.config.temporal.namespace });
      const keyOf = async (eventId: string) => {
        const { rows } = await stack.sql.query<{ workflow_id: string }>(
          'SELECT workflow_id FROM event_routes WHERE event_id = $1',
          [eventId],
        );
        return (await client.workflow.getHandle(rows[0]!.workflow_id).describe()).priority?.fairnessKey;
      };
      expect(await keyOf('small-0')).toBe('small-tenant');
      expect(await keyOf('order-0')).toBe(ordersId);
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
        return rows[0]!.n === 2 * (BIG + SMALL) ? true : undefined;
      },
      300_000,
    );

    // The run records name the key each run was started with.
    const { rows: keys } = await stack.sql.query<{ activity_id: string; fairness_key: string; n: number }>(
      'SELECT activity_id, fairness_key, count(*)::int AS n FROM activity_runs GROUP BY 1, 2 ORDER BY 1, 2',
    );
    expect(keys).toEqual(
      expect.arrayContaining([
        { activity_id: tenantsId, fairness_key: 'big-tenant', n: BIG },
        { activity_id: tenantsId, fairness_key: 'small-tenant', n: SMALL },
        { activity_id: importId, fairness_key: importId, n: BIG },
        { activity_id: ordersId, fairness_key: ordersId, n: SMALL },
      ]),
    );
    const run = await stack.api.server.inject({
      method: 'GET',
      url: `/v1/runs?activity_id=${tenantsId}&limit=1`,
    });
    expect(run.json().items[0].fairness_key).toMatch(/^(big|small)-tenant$/);

    // Counted from the records: in arrival order (no fairness) all 60 of a backlog finish before the
    // last of the few that came after it; with fairness the few share the dispatch with the backlog.
    const { rows } = await stack.sql.query<{ event_id: string }>(
      'SELECT event_id FROM activity_runs ORDER BY finished_at, run_id',
    );
    const order = rows.map((row) => row.event_id);
    expect(aheadOfLast(order, 'big-', 'small-')).toBeLessThanOrEqual(BIG / 2);
    expect(aheadOfLast(order, 'import-', 'order-')).toBeLessThanOrEqual(BIG / 2);
  }, 420_000);
});
