import { createDatabase, createEventsRepository, type Database } from '@activity-core/db';
import { createEventRetention } from '@activity-core/router';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { silentLogger, startStack, waitFor, type TestStack } from './harness';

/**
 * Payload retention (EVENT_PAYLOAD_RETENTION_DAYS, docs/recovery.md): past it
 * the purger clears an event's data but keeps its id, fingerprint and
 * decision log, so a redelivery is still a duplicate, `GET /v1/events/{id}`
 * still answers why, and a replay — which would need the data — answers 410.
 * An event whose routing is not final keeps its data.
 */
let stack: TestStack;
let database: Database;

beforeAll(async () => {
  // The purge is driven by the test (an injected clock), not by the API's timer.
  stack = await startStack({ worker: false, env: { EVENT_RETENTION_DAYS: '90', EVENT_PAYLOAD_RETENTION_DAYS: '7' } });
  database = createDatabase({ url: stack.config.databaseUrl, max: 2 });
});
afterAll(async () => {
  await database?.close();
  await stack?.close();
});

const DAY = 86_400_000;
const event = (event_id: string) => ({
  event_id,
  event_type: 'payload.retention',
  source: 'tests',
  occurred_at: '2026-03-01T09:00:00Z',
  data: { order: event_id, amount: 42 },
});
const inject = (method: 'GET' | 'POST', url: string, payload?: object) =>
  stack.api.server.inject({ method, url, ...(payload === undefined ? {} : { payload }) });
/** A purger whose clock is `days` ahead: everything received now is that old to it. */
const purgerAhead = (days: number) =>
  createEventRetention({
    events: createEventsRepository(database.db),
    logger: silentLogger,
    retentionMs: 90 * DAY,
    payloadRetentionMs: 7 * DAY,
    now: () => new Date(Date.now() + days * DAY),
  });

describe('payload retention', () => {
  test("past the payload retention an event's data is cleared, its decision log kept, a redelivery is still a duplicate and a replay answers 410", async () => {
    const activity = await inject('POST', '/v1/activities', {
      name: 'payload-retention',
      triggers: [{ type: 'event', event_type: 'payload.retention' }],
      tasks: [{ type: 'noop' }],
    });
    expect(activity.statusCode, activity.body).toBe(201);
    for (const id of ['routed', 'expired', 'held-pending'])
      expect((await inject('POST', '/v1/events', event(id))).statusCode).toBe(202);
    // A route still waiting to be started is acknowledged work that needs the data: it is never cleared.
    await stack.sql.query(`UPDATE event_routes SET outcome = 'pending' WHERE event_id = 'held-pending'`);

    // Six days on nothing is cleared; eight days on the routed events are (the events stay: 90 days).
    expect(await purgerAhead(6).purge()).toBe(0);
    const young = (await inject('GET', '/v1/events/routed')).json();
    expect(young.payload_expired_at).toBeNull();
    expect(young.envelope.data).toEqual({ order: 'routed', amount: 42 });
    expect(await purgerAhead(8).purge()).toBe(0); // nothing forgotten: the event retention is 90 days

    const cleared = await stack.sql.query(
      `SELECT event_id, payload->'data' AS data, payload_expired_at FROM events WHERE event_type = 'payload.retention' ORDER BY event_id`,
    );
    expect(cleared.rows.map((row) => [row.event_id, row.data, row.payload_expired_at !== null])).toEqual([
      ['expired', {}, true],
      ['held-pending', { order: 'held-pending', amount: 42 }, false],
      ['routed', {}, true],
    ]);

    const stored = await inject('GET', '/v1/events/expired');
    expect(stored.statusCode).toBe(200);
    expect(stored.json()).toMatchObject({
      event_id: 'expired',
      envelope: { event_id: 'expired', event_type: 'payload.retention', source: 'tests', data: {} },
      routes: [expect.objectContaining({ outcome: 'started' })],
    });
    expect(stored.json().payload_expired_at).toEqual(expect.any(String));

    // The fingerprint is kept: the same event delivered again is still recognised, and starts nothing.
    const again = await inject('POST', '/v1/events', event('expired'));
    expect(again.statusCode).toBe(202);
    expect(again.json().status).toBe('duplicate');

    const replay = await inject('POST', '/v1/events/expired/replay', { mode: 'force' });
    expect(replay.statusCode).toBe(410);
    expect(replay.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(replay.json()).toMatchObject({
      type: 'urn:activity-core:problem:gone',
      status: 410,
      detail: expect.stringContaining('EVENT_PAYLOAD_RETENTION_DAYS'),
    });
    // A bulk replay over them skips each event whose data is gone, and says why.
    const bulk = await inject('POST', '/v1/events/replay', {
      filter: {
        event_type: 'payload.retention',
        from: new Date(Date.now() - DAY).toISOString(),
        to: new Date(Date.now() + 60_000).toISOString(),
      },
      mode: 'force',
    });
    expect(bulk.statusCode, bulk.body).toBe(202);
    const done = await waitFor('the bulk replay to complete', async () => {
      const record = (await inject('GET', `/v1/events/replay/${bulk.json().id}`)).json();
      return record.status === 'completed' ? record : undefined;
    });
    expect(done).toMatchObject({ total: 3, processed: 3, skipped: 2, skipped_reasons: { payload_expired: 2 } });

    // An unknown id is still a 404, not a 410.
    expect((await inject('POST', '/v1/events/never-seen/replay')).statusCode).toBe(404);
  });

  test('several purgers at once clear each expired event once', async () => {
    const ids = Array.from({ length: 30 }, (_, i) => `bulk-${i}`);
    for (const id of ids) expect((await inject('POST', '/v1/events', event(id))).statusCode).toBe(202);
    const purger = (batch: number) =>
      createEventRetention({
        events: createEventsRepository(database.db),
        logger: silentLogger,
        payloadRetentionMs: 7 * DAY,
        batchSize: batch,
        now: () => new Date(Date.now() + 8 * DAY),
      });
    await Promise.all([purger(4).purge(), purger(4).purge(), purger(4).purge()]);
    const { rows } = await stack.sql.query(
      `SELECT count(*)::int AS n FROM events WHERE event_id = ANY($1) AND payload_expired_at IS NOT NULL AND payload->'data' = '{}'::jsonb`,
      [ids],
    );
    expect(rows[0].n).toBe(30);
  });
});
