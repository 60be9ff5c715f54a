import { createDatabase, createEventsRepository, type Database } from '@activity-core/db';
import { createEventRetention } from '@activity-core/router';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { silentLogger, startStack, type TestStack } from './harness';
import { eventRunWorkflowId } from '@activity-core/contracts/ids';

let stack: TestStack;
let database: Database;

beforeAll(async () => {
  // Retention sweeps are driven by the test, not by the API's timer.
  stack = await startStack({ worker: false, env: { EVENT_RETENTION_DAYS: '30' } });
  database = createDatabase({ url: stack.config.databaseUrl, max: 4 });
});
afterAll(async () => {
  await database?.close();
  await stack?.close();
});

const DAY = 86_400_000;
const event = (event_id: string, event_type = 'retention.test') => ({
  event_id,
  event_type,
  source: 'tests',
  occurred_at: '2026-03-01T09:00:00Z',
  data: { n: 1 },
});
const post = (payload: object) => stack.api.server.inject({ method: 'POST', url: '/v1/events', payload });

/** Makes events look as if they arrived `days` ago. */
async function age(ids: string[], days: number): Promise<void> {
  await stack.sql.query(`UPDATE events SET received_at = now() - make_interval(days => $2) WHERE event_id = ANY($1)`, [
    ids,
    days,
  ]);
}

const retention = (batchSize = 1_000) =>
  createEventRetention({
    events: createEventsRepository(database.db),
    logger: silentLogger,
    retentionMs: stack.config.events.retentionDays! * DAY,
    batchSize,
  });

describe('Idempotency-Key', () => {
  const withoutId = {
    event_type: 'key.test',
    source: 'tests',
    occurred_at: '2026-03-01T09:00:00Z',
    data: { amount: 1 },
  };
  const send = (key: string, payload: object) =>
    stack.api.server.inject({ method: 'POST', url: '/v1/events', payload, headers: { 'idempotency-key': key } });

  test('the quoted form of the IETF draft and the bare token are the same key', async () => {
    const first = await send('"order-7-paid"', withoutId);
    expect(first.json()).toMatchObject({ event_id: 'order-7-paid', event_id_assigned: false, status: 'accepted' });
    expect((await send('order-7-paid', withoutId)).json()).toMatchObject({
      event_id: 'order-7-paid',
      status: 'duplicate',
    });
    const stored = await stack.sql.query(`SELECT id_origin FROM events WHERE event_id = 'order-7-paid'`);
    expect(stored.rows).toEqual([{ id_origin: 'idempotency_key' }]);
  });

  test('the same key with a different payload is a 422 that says the key was reused', async () => {
    expect((await send('order-8-paid', withoutId)).statusCode).toBe(202);
    const reused = await send('order-8-paid', { ...withoutId, data: { amount: 2 } });
    expect(reused.statusCode).toBe(422);
    expect(reused.json()).toMatchObject({
      type: 'urn:activity-core:problem:event-id-reused',
      detail: expect.stringContaining('Idempotency-Key'),
    });
  });

  test('a redelivery with the payload keys in another order is the same event', async () => {
    expect((await send('order-9-paid', { ...withoutId, data: { a: 1, b: { c: 2, d: [1, 2] } } })).json().status).toBe(
      'accepted',
    );
    const reordered = {
      data: { b: { d: [1, 2], c: 2 }, a: 1 },
      occurred_at: withoutId.occurred_at,
      source: 'tests',
      event_type: 'key.test',
    };
    expect((await send('order-9-paid', reordered)).json().status).toBe('duplicate');
  });
});

describe('how long event ids are remembered', () => {
  test('a routed event past the retention is forgotten with its decision log, and newer or pending ones are kept', async () => {
    const activity = (
      await stack.api.server.inject({
        method: 'POST',
        url: '/v1/activities',
        payload: {
          name: 'retention',
          triggers: [{ type: 'event', event_type: 'retention.test' }],
          tasks: [{ type: 'noop' }],
        },
      })
    ).json();
    for (const id of ['old-routed', 'old-pending', 'recent']) expect((await post(event(id))).statusCode).toBe(202);
    await age(['old-routed', 'old-pending'], 31);
    await age(['recent'], 29);
    // An event still waiting for Temporal is acknowledged work: never forgotten, however old.
    await stack.sql.query(
      `UPDATE events SET routing_state = 'pending', routed_at = NULL WHERE event_id = 'old-pending'`,
    );

    expect(await retention().purge()).toBe(1);

    const left = await stack.sql.query(
      `SELECT event_id FROM events WHERE event_type = 'retention.test' ORDER BY event_id`,
    );
    expect(left.rows.map((r) => r.event_id)).toEqual(['old-pending', 'recent']);
    const routes = await stack.sql.query(`SELECT count(*)::int AS n FROM event_routes WHERE event_id = 'old-routed'`);
    expect(routes.rows[0].n).toBe(0);
    expect((await stack.api.server.inject({ method: 'GET', url: '/v1/events/old-routed' })).statusCode).toBe(404);

    // After expiry the id is new to the API, but the run it started is still
    // recorded in activity_runs (never swept): the route is a duplicate and no
    // second run starts.
    const again = (await post(event('old-routed'))).json();
    expect(again.status).toBe('accepted');
    expect(again.runs).toEqual([
      expect.objectContaining({ workflow_id: eventRunWorkflowId(activity.id, 'old-routed'), status: 'duplicate' }),
    ]);
  });

  test('sweepers in several processes at once forget each expired event exactly once', async () => {
    const ids = Array.from({ length: 60 }, (_, i) => `bulk-${i}`);
    for (const id of ids) expect((await post(event(id, 'retention.bulk'))).statusCode).toBe(202);
    await age(ids, 40);
    const removed = await Promise.all([retention(7).purge(), retention(7).purge(), retention(7).purge()]);
    expect(removed.reduce((a, b) => a + b, 0)).toBe(60);
    const left = await stack.sql.query(`SELECT count(*)::int AS n FROM events WHERE event_type = 'retention.bulk'`);
    expect(left.rows[0].n).toBe(0);
  });
});
