import { createDatabase, createEmitBudgetsRepository, type Database } from '@activity-core/db';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startStack, type TestStack } from './harness';

let stack: TestStack;
let database: Database;

beforeAll(async () => {
  // A small budget keeps the fan-out short; the default hop limit (8) would let it grow 3^8-fold.
  stack = await startStack({ env: { EMIT_MAX_PER_ROOT: '5' } });
  database = createDatabase({ url: stack.config.databaseUrl, max: 10 });
});
afterAll(async () => {
  await database?.close();
  await stack?.close();
});

const fanningOut = (name: string, other: string) => ({
  name,
  triggers: [{ type: 'event', event_type: `${name}.go` }],
  tasks: [1, 2, 3].map((n) => ({ type: 'emit_event', config: { event_type: `${other}.go`, data: { n } } })),
});

describe('the emit budget per root event', () => {
  test('two activities emitting each other three times stop after EMIT_MAX_PER_ROOT emitted events, and the refused tasks say why', async () => {
    for (const [name, other] of [
      ['budget-ping', 'budget-pong'],
      ['budget-pong', 'budget-ping'],
    ] as const) {
      const created = await stack.api.server.inject({
        method: 'POST',
        url: '/v1/activities',
        payload: fanningOut(name, other),
      });
      expect(created.statusCode, created.body).toBe(201);
    }
    const posted = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: {
        event_id: 'budget-origin',
        event_type: 'budget-ping.go',
        source: 'tests',
        occurred_at: '2026-03-01T09:00:00Z',
        data: {},
      },
    });
    expect(posted.statusCode, posted.body).toBe(202);

    // The origin's run emits 3 (3 pong runs); those get 2 more between them (2 ping runs); every later emit is refused.
    const settled = async () =>
      (
        await stack.sql.query<{ total: number; open: number }>(
          `SELECT count(*)::int AS total, count(*) FILTER (WHERE status NOT IN ('succeeded','failed'))::int AS open FROM activity_runs`,
        )
      ).rows[0];
    await expect.poll(settled, { timeout: 60_000, interval: 250 }).toEqual({ total: 6, open: 0 });
    // Nothing keeps growing afterwards. Every run has ended, so every emit was made; once every event is routed
    // and every route that started a run has its run recorded, no emitted event can still add one.
    const unprocessed = async () =>
      (
        await stack.sql.query<{ pending: number; unrecorded: number }>(
          `SELECT (SELECT count(*) FROM events WHERE routing_state = 'pending')::int AS pending,
                  ((SELECT count(*) FROM event_routes WHERE outcome IN ('started', 'duplicate')) -
                   (SELECT count(*) FROM activity_runs))::int AS unrecorded`,
        )
      ).rows[0];
    await expect.poll(unprocessed, { timeout: 60_000, interval: 100 }).toEqual({ pending: 0, unrecorded: 0 });
    expect(await settled()).toEqual({ total: 6, open: 0 });

    const emitted = await stack.sql.query("SELECT count(*)::int AS n FROM events WHERE credential LIKE 'emit:%'");
    expect(emitted.rows[0].n).toBe(5);
    const roots = await stack.sql.query('SELECT DISTINCT root_source, root_event_id FROM emitted_event_roots');
    expect(roots.rows).toEqual([{ root_source: 'tests', root_event_id: 'budget-origin' }]);
    const budget = await stack.sql.query('SELECT emitted FROM emit_budgets');
    expect(budget.rows).toEqual([{ emitted: 5 }]);

    const refused = await stack.sql.query<{ error: { type?: string; message?: string } }>(
      `SELECT error FROM task_instances WHERE status = 'failed'`,
    );
    expect(refused.rows.length).toBeGreaterThan(0);
    for (const row of refused.rows) {
      expect(row.error.type).toBe('emit_budget_exceeded');
      expect(row.error.message).toContain('EMIT_MAX_PER_ROOT is 5');
      expect(row.error.message).toContain('budget-origin');
    }
  });

  test('concurrent claims on one root grant exactly the limit, and a repeated claim of a counted event is granted without counting it again', async () => {
    const budgets = createEmitBudgetsRepository(database.db);
    const trigger = { source: 'tests', eventId: 'claims-origin' };
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        budgets.claim({ eventId: `claims-${i}`, trigger, triggerEmitted: false, limit: 7 }),
      ),
    );
    const granted = results.flatMap((result, i) => (result.granted ? [`claims-${i}`] : []));
    expect(granted).toHaveLength(7);

    const again = await budgets.claim({ eventId: granted[0]!, trigger, triggerEmitted: false, limit: 7 });
    expect(again).toMatchObject({ granted: true, emitted: 7 });

    // A run triggered by a counted event counts against the same root.
    const child = await budgets.claim({
      eventId: 'claims-child',
      trigger: { source: 'activity-core', eventId: granted[1]! },
      triggerEmitted: true,
      limit: 7,
    });
    expect(child).toEqual({ granted: false, root: trigger, emitted: 7 });
    const rows = await stack.sql.query(
      "SELECT emitted FROM emit_budgets WHERE root_source = 'tests' AND root_event_id = 'claims-origin'",
    );
    expect(rows.rows).toEqual([{ emitted: 7 }]);
  });
});
