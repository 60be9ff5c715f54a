import { eventRunWorkflowId } from '@activity-core/contracts';
import { createCoalesceWindowsRepository, createDatabase, type Database } from '@activity-core/db';
import { createWindowRevival } from '@activity-core/router';
import { createCoalesceStarter } from '@activity-core/temporal/client';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { silentLogger, startStack, waitFor, type TestStack } from './harness';

/**
 * A debounce window whose workflow an operator terminated in the Temporal UI
 * would keep its events `coalescing` for ever: nothing else closes it. The
 * dispatcher's revival (packages/router/src/window-revival.ts, once a minute
 * in every API process) starts the workflow again under the same id once the
 * window is overdue, and the window closes once with all its members. Here
 * the revival is called directly, with no grace, instead of waiting for the
 * dispatcher's minute.
 */
let stack: TestStack;
let database: Database;

beforeAll(async () => {
  stack = await startStack();
  database = createDatabase({ url: stack.config.databaseUrl, max: 2 });
});
afterAll(async () => {
  await database?.close();
  await stack?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('coalescing windows whose workflow ended without closing them', () => {
  test('a terminated window workflow is started again once the window is overdue, and the burst runs once with its last event', async () => {
    const registered = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'debounce-revival',
        triggers: [{ type: 'event', event_type: 'contact.revival', debounce: { period: '2s', max_wait: '60s' } }],
        tasks: [{ type: 'noop' }],
      },
    });
    expect(registered.statusCode, registered.body).toBe(201);
    const activityId = registered.json().id as string;
    for (const n of [1, 2, 3]) {
      const sent = await stack.api.server.inject({
        method: 'POST',
        url: '/v1/events',
        payload: {
          event_id: `evt_revival_${n}`,
          event_type: 'contact.revival',
          source: 'crm',
          occurred_at: '2026-03-01T09:00:00Z',
          data: { n },
        },
      });
      expect(sent.statusCode, sent.body).toBe(202);
    }
    const window = await waitFor('the window and its running workflow', async () => {
      const { rows } = await stack.sql.query(
        `SELECT id, workflow_id FROM coalesce_windows WHERE activity_id = $1 AND state = 'open'`,
        [activityId],
      );
      const routes = await stack.sql.query(
        `SELECT count(*)::int AS n FROM event_routes WHERE activity_id = $1 AND outcome = 'coalescing'`,
        [activityId],
      );
      return rows.length === 1 && routes.rows[0].n === 3 ? (rows[0] as { id: string; workflow_id: string }) : undefined;
    });
    const revival = createWindowRevival({
      windows: createCoalesceWindowsRepository(database.db),
      starter: createCoalesceStarter({ client: stack.client, taskQueue: stack.config.temporal.taskQueue }),
      logger: silentLogger,
      graceMs: 0,
    });
    // Not due yet: nothing to look at.
    expect(await revival.reviveOverdue()).toBe(0);

    await stack.client.workflow.getHandle(window.workflow_id).terminate('an operator ended it by hand');
    await sleep(2_500);
    // Overdue and still open: its workflow ended without closing it.
    const stranded = await stack.sql.query(`SELECT state FROM coalesce_windows WHERE id = $1`, [window.id]);
    expect(stranded.rows[0].state).toBe('open');

    expect(await revival.reviveOverdue()).toBe(1);
    const runs = await waitFor('the burst to run once', async () => {
      const { rows } = await stack.sql.query(
        `SELECT workflow_id, status FROM activity_runs WHERE activity_id = $1 AND status = 'succeeded'`,
        [activityId],
      );
      return rows.length > 0 ? rows : undefined;
    });
    expect(runs).toEqual([{ workflow_id: eventRunWorkflowId(activityId, 'evt_revival_3'), status: 'succeeded' }]);
    const outcomes = await stack.sql.query(
      `SELECT outcome, count(*)::int AS n FROM event_routes WHERE activity_id = $1 GROUP BY outcome ORDER BY outcome`,
      [activityId],
    );
    expect(outcomes.rows).toEqual([
      { outcome: 'merged', n: 2 },
      { outcome: 'started', n: 1 },
    ]);
    // Closed: nothing more to revive, and the completed workflow is never started again.
    expect(await revival.reviveOverdue()).toBe(0);
    const described = await stack.client.workflow.getHandle(window.workflow_id).describe();
    expect(described.status.name).toBe('COMPLETED');
  });
});
