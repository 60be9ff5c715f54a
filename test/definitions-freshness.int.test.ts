import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApiApp, type ApiApp } from '../apps/api/src/app';
import {
  createDatabase,
  createDefinitionsRepository,
  createEventsRepository,
  createRunsRepository,
  type Database,
} from '@activity-core/db';
import { createEventIngest } from '@activity-core/router';
import { createRunStarter } from '@activity-core/temporal/client';
import { silentLogger, startStack, type TestStack } from './harness';

/**
 * Every process keeps its own index of the enabled definitions and reloads it
 * when the database's change counter moves. These tests hold it to "changed
 * through one process, seen by the next event in another".
 */
let stack: TestStack;
/** A second API process on the same database (and task queue): the one events are posted to. */
let other: ApiApp;

beforeAll(async () => {
  stack = await startStack();
  other = await createApiApp(stack.config, { logger: false, dispatcher: false });
});
afterAll(async () => {
  await other?.close();
  await stack?.close();
});

const envelope = (event_id: string, event_type: string) => ({
  event_id,
  event_type,
  source: 'shop',
  occurred_at: '2026-03-01T09:00:00Z',
  data: { amount: 150 },
});

async function post(
  app: ApiApp,
  event_id: string,
  event_type: string,
): Promise<{ runs: Array<{ activity_id: string; status: string }>; filtered: Array<{ activity_id: string }> }> {
  const response = await app.server.inject({
    method: 'POST',
    url: '/v1/events',
    payload: envelope(event_id, event_type),
  });
  expect(response.statusCode, response.body).toBe(202);
  return response.json();
}

describe('definitions registered through one API process', () => {
  test('are matched, changed and disabled for the very next event posted to another process', async () => {
    // B has routed an event already, so it holds a loaded index that is now going to be stale.
    expect((await post(other, 'fresh-0', 'fresh.created')).runs).toEqual([]);

    const created = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: { name: 'fresh', triggers: [{ type: 'event', event_type: 'fresh.created' }], tasks: [{ type: 'noop' }] },
    });
    expect(created.statusCode, created.body).toBe(201);
    const activity = created.json() as { id: string };

    const first = await post(other, 'fresh-1', 'fresh.created');
    expect(first.runs).toEqual([expect.objectContaining({ activity_id: activity.id, status: 'started' })]);

    // A new trigger through A: the old type no longer matches in B, the new one does, at version 2.
    const changed = await stack.api.server.inject({
      method: 'PUT',
      url: `/v1/activities/${activity.id}`,
      payload: {
        name: 'fresh',
        triggers: [{ type: 'event', event_type: 'fresh.*', filter: 'data.amount > 100' }],
        tasks: [{ type: 'noop' }],
      },
    });
    expect(changed.statusCode, changed.body).toBe(200);
    expect((await post(other, 'fresh-2', 'fresh.created')).runs).toEqual([
      expect.objectContaining({ activity_id: activity.id, status: 'started' }),
    ]);
    expect((await post(other, 'fresh-3', 'fresh.updated.now')).runs).toEqual([
      expect.objectContaining({ activity_id: activity.id, status: 'started' }),
    ]);
    const routes = await stack.sql.query(
      'SELECT event_id, activity_version FROM event_routes WHERE activity_id = $1 ORDER BY event_id',
      [activity.id],
    );
    expect(routes.rows).toEqual([
      { event_id: 'fresh-1', activity_version: 1 },
      { event_id: 'fresh-2', activity_version: 2 },
      { event_id: 'fresh-3', activity_version: 2 },
    ]);

    const disabled = await stack.api.server.inject({ method: 'POST', url: `/v1/activities/${activity.id}/disable` });
    expect(disabled.statusCode, disabled.body).toBe(200);
    const afterDisable = await post(other, 'fresh-4', 'fresh.created');
    expect(afterDisable.runs).toEqual([]);
    expect(afterDisable.filtered).toEqual([]);

    const enabled = await stack.api.server.inject({ method: 'POST', url: `/v1/activities/${activity.id}/enable` });
    expect(enabled.statusCode, enabled.body).toBe(200);
    expect((await post(other, 'fresh-5', 'fresh.created')).runs).toEqual([
      expect.objectContaining({ activity_id: activity.id, status: 'started' }),
    ]);

    const deleted = await stack.api.server.inject({ method: 'DELETE', url: `/v1/activities/${activity.id}` });
    expect(deleted.statusCode, deleted.body).toBeLessThan(300);
    expect((await post(other, 'fresh-6', 'fresh.created')).runs).toEqual([]);
  });
});

describe('the definition index of one process', () => {
  let database: Database;
  beforeAll(() => {
    database = createDatabase({ url: stack.config.databaseUrl, max: 2 });
  });
  afterAll(async () => {
    await database?.close();
  });

  test('is loaded once per change to the definitions, not once per event, whichever process made the change', async () => {
    const loads: Array<bigint | undefined> = [];
    const ingest = createEventIngest({
      definitions: createDefinitionsRepository(database.db),
      events: createEventsRepository(database.db),
      runs: createRunsRepository(database.db),
      starter: createRunStarter({ client: stack.client, taskQueue: stack.config.temporal.taskQueue }),
      logger: silentLogger,
      onDefinitionsLoad: (version) => loads.push(version),
    });
    const send = (id: string) =>
      ingest.ingest({ ...envelope(id, 'counted.tick'), occurred_at: '2026-03-01T09:00:00.000Z' } as never, 'body');

    for (let i = 0; i < 5; i += 1) await send(`counted-a-${i}`);
    expect(loads).toHaveLength(1);

    // A change through the API (another pool, as another process would be): one reload, then none.
    const created = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'counted',
        triggers: [{ type: 'event', event_type: 'counted.tick' }],
        tasks: [{ type: 'noop' }],
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    for (let i = 0; i < 5; i += 1)
      expect((await send(`counted-b-${i}`)).runs).toEqual([
        expect.objectContaining({ activity_id: (created.json() as { id: string }).id, status: 'started' }),
      ]);
    expect(loads).toHaveLength(2);
    expect(loads[1]! > loads[0]!).toBe(true);

    // A change made in SQL bumps the counter too (the trigger is in the database, not in the repository).
    await stack.sql.query("UPDATE activity_definitions SET enabled = false WHERE name = 'counted'");
    for (let i = 0; i < 3; i += 1) expect((await send(`counted-c-${i}`)).runs).toEqual([]);
    expect(loads).toHaveLength(3);
  });
});
