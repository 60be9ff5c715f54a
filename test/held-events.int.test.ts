import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId } from '@activity-core/contracts';
import { createDatabase, createEventsRepository } from '@activity-core/db';
import { startStack, waitFor, type TestStack } from './harness';

const ADMIN = 'held-admin-key-0123456789abcdefghijklmn';
const INGEST = 'held-ingest-key-0123456789abcdefghijklm';

const event = (id: string, type: string) => ({
  event_id: id,
  event_type: type,
  source: 'tests',
  occurred_at: '2026-03-01T09:00:00Z',
  data: {},
});

describe('held events: a disabled activity that holds its events until they are released, discarded or expire', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startStack({
      env: { API_KEYS: ADMIN, INGEST_KEYS: INGEST, RATE_LIMIT_MAX: '0' },
      // The expiry sweep every 200 ms, so an expiry set in the past (below) is recorded within the test's wait.
      api: { heldExpiryIntervalMs: 200 },
    });
  });
  afterAll(async () => {
    await stack?.close();
  });

  const api = async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown, key = ADMIN) => {
    const response = await stack.api.server.inject({
      method,
      url,
      headers: { authorization: `Bearer ${key}` },
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return { status: response.statusCode, json: response.body === '' ? undefined : response.json() };
  };

  const register = async (name: string, eventType: string): Promise<string> => {
    const created = await api('POST', '/v1/activities', {
      name,
      triggers: [{ type: 'event', event_type: eventType }],
      tasks: [{ type: 'noop' }],
    });
    expect(created.status).toBe(201);
    return created.json.id as string;
  };

  const send = async (ids: string[], type: string) => {
    for (const id of ids) expect((await api('POST', '/v1/events', event(id, type))).status).toBe(202);
  };

  const routeOf = async (eventId: string, activityId: string) =>
    (
      await stack.sql.query(
        'SELECT outcome, detail, expires_at FROM event_routes WHERE event_id = $1 AND activity_id = $2',
        [eventId, activityId],
      )
    ).rows[0] as { outcome: string; detail: string; expires_at: Date } | undefined;

  const runsOf = async (activityId: string): Promise<string[]> =>
    (
      await stack.sql.query('SELECT workflow_id FROM activity_runs WHERE activity_id = $1 ORDER BY workflow_id', [
        activityId,
      ])
    ).rows.map((row: { workflow_id: string }) => row.workflow_id);

  test('events held while disabled are listed oldest first, released by id or all with their own run ids, discarded with who and when; releasing twice starts nothing new', async () => {
    const id = await register('held-orders', 'held.order');
    const disabled = await api('POST', `/v1/activities/${id}/disable`, {
      when_disabled: { action: 'hold', ttl: '1h' },
    });
    expect(disabled.status).toBe(200);
    expect(disabled.json).toMatchObject({
      enabled: false,
      definition: { when_disabled: { action: 'hold', ttl: '1h' } },
    });

    const ids = ['evt_h1', 'evt_h2', 'evt_h3', 'evt_h4', 'evt_h5'];
    await send(ids, 'held.order');
    const route = await routeOf('evt_h1', id);
    expect(route?.outcome).toBe('held');
    expect(route?.detail).toBe(`held: activity disabled; expires ${route?.expires_at.toISOString()}`);
    const decisionLog = await api('GET', '/v1/events/evt_h1');
    expect(decisionLog.json.routes).toMatchObject([{ activity_id: id, outcome: 'held' }]);
    expect(decisionLog.json.routing_state).toBe('routed');

    // Listed oldest first, in pages.
    const first = await api('GET', `/v1/activities/${id}/held-events?limit=3`);
    expect(first.status).toBe(200);
    expect(first.json.total).toBe(5);
    expect(first.json.items.map((item: { event_id: string }) => item.event_id)).toEqual(ids.slice(0, 3));
    expect(first.json.items[0]).toMatchObject({
      event_type: 'held.order',
      source: 'tests',
      workflow_id: eventRunWorkflowId(id, 'evt_h1'),
    });
    const second = await api('GET', `/v1/activities/${id}/held-events?limit=3&cursor=${first.json.next_cursor}`);
    expect(second.json.items.map((item: { event_id: string }) => item.event_id)).toEqual(ids.slice(3));
    expect(second.json.next_cursor).toBeNull();

    // Not while disabled: the release would run a disabled activity.
    const early = await api('POST', `/v1/activities/${id}/held-events/release`, {});
    expect(early.status).toBe(409);
    expect(early.json.detail).toContain('is disabled');

    // Resuming asks: enable answers how many are held and releases none by itself.
    const enabled = await api('POST', `/v1/activities/${id}/enable`);
    expect(enabled.status).toBe(200);
    expect(enabled.json).toMatchObject({ enabled: true, held_events: { held: 5, released: 0 } });
    expect(await runsOf(id)).toEqual([]);

    const some = await api('POST', `/v1/activities/${id}/held-events/release`, { event_ids: ['evt_h2', 'evt_h1'] });
    expect(some.status).toBe(200);
    expect(some.json).toMatchObject({ released: 2, started: 2, duplicate: 0, pending: 0, remaining: 3, not_held: [] });
    const again = await api('POST', `/v1/activities/${id}/held-events/release`, { event_ids: ['evt_h1', 'evt_h2'] });
    expect(again.json).toMatchObject({ released: 0, started: 0, remaining: 3, not_held: ['evt_h1', 'evt_h2'] });
    const released = await routeOf('evt_h1', id);
    expect(released?.outcome).toBe('started');
    expect(released?.detail).toMatch(/^released by api_key:.+ at .+; was held: activity disabled; expires /);

    const discarded = await api('POST', `/v1/activities/${id}/held-events/discard`, {
      event_ids: ['evt_h3', 'evt_nope'],
    });
    expect(discarded.status).toBe(200);
    expect(discarded.json).toMatchObject({ discarded: 1, remaining: 2, not_held: ['evt_nope'] });
    expect((await routeOf('evt_h3', id))?.outcome).toBe('discarded');
    expect((await routeOf('evt_h3', id))?.detail).toMatch(/^discarded by api_key:.+ at .+; was held: /);

    const rest = await api('POST', `/v1/activities/${id}/held-events/release`);
    expect(rest.json).toMatchObject({ released: 2, started: 2, remaining: 0 });
    const twice = await api('POST', `/v1/activities/${id}/held-events/release`);
    expect(twice.json).toMatchObject({ released: 0, started: 0, remaining: 0 });

    await waitFor('the four released runs are recorded', async () =>
      (await runsOf(id)).length === 4 ? true : undefined,
    );
    expect(await runsOf(id)).toEqual(
      ['evt_h1', 'evt_h2', 'evt_h4', 'evt_h5'].map((eventId) => eventRunWorkflowId(id, eventId)).sort(),
    );
    expect((await api('GET', `/v1/activities/${id}/held-events`)).json).toMatchObject({ items: [], total: 0 });
  });

  test('enable with release_held=true releases what was held; an activity disabled without a hold drops its events as before', async () => {
    const held = await register('held-on-enable', 'held.enable');
    expect((await api('POST', `/v1/activities/${held}/disable`, { when_disabled: { action: 'hold' } })).status).toBe(
      200,
    );
    await send(['evt_e1', 'evt_e2'], 'held.enable');
    const enabled = await api('POST', `/v1/activities/${held}/enable?release_held=true`);
    expect(enabled.json).toMatchObject({ enabled: true, held_events: { held: 0, released: 2 } });
    expect(enabled.json.definition.when_disabled).toEqual({ action: 'hold', ttl: '7d' });
    await waitFor('both released runs recorded', async () => ((await runsOf(held)).length === 2 ? true : undefined));

    const dropping = await register('held-drop', 'held.drop');
    expect((await api('POST', `/v1/activities/${dropping}/disable`)).status).toBe(200);
    await send(['evt_d1'], 'held.drop');
    expect((await api('GET', '/v1/events/evt_d1')).json.routes).toEqual([]);
    const back = await api('POST', `/v1/activities/${dropping}/enable`);
    expect(back.json.held_events).toEqual({ held: 0, released: 0 });
    expect(await runsOf(dropping)).toEqual([]);
  });

  test('a replay of a held event leaves it held while the activity is disabled, and once it is enabled starts its run like a release', async () => {
    const id = await register('held-replayed', 'held.replayed');
    await api('POST', `/v1/activities/${id}/disable`, { when_disabled: { action: 'hold', ttl: '1h' } });
    await send(['evt_r1'], 'held.replayed');
    const whileOff = await api('POST', '/v1/events/evt_r1/replay', {});
    expect(whileOff.json.runs).toEqual([]);
    expect((await routeOf('evt_r1', id))?.outcome).toBe('held');
    await api('POST', `/v1/activities/${id}/enable`);
    const replayed = await api('POST', '/v1/events/evt_r1/replay', {});
    expect(replayed.json.runs).toMatchObject([{ activity_id: id, status: 'started' }]);
    expect((await routeOf('evt_r1', id))?.detail).toMatch(
      /^replayed \(if_no_runs\) by .+; was held: held: activity disabled/,
    );
    expect((await api('GET', `/v1/activities/${id}/held-events`)).json.total).toBe(0);
    await waitFor('the replayed run is recorded', async () => ((await runsOf(id)).length === 1 ? true : undefined));
  });

  test("a release goes through the activity's throttle: every released run is paced, and their start times follow the arrival order", async () => {
    const created = await api('POST', '/v1/activities', {
      name: 'held-paced',
      triggers: [{ type: 'event', event_type: 'held.paced' }],
      tasks: [{ type: 'noop' }],
      throttle: { limit: 5, period: '1s' },
      when_disabled: { action: 'hold', ttl: '1h' },
      enabled: false,
    });
    expect(created.status).toBe(201);
    const id = created.json.id as string;
    const ids = ['evt_p1', 'evt_p2', 'evt_p3', 'evt_p4', 'evt_p5', 'evt_p6'];
    await send(ids, 'held.paced');
    expect((await api('POST', `/v1/activities/${id}/enable?release_held=true`)).json.held_events).toEqual({
      held: 0,
      released: 6,
    });
    const { rows } = await stack.sql.query(
      `SELECT r.event_id, r.outcome, r.paced_at, r.not_before FROM event_routes r WHERE r.activity_id = $1`,
      [id],
    );
    const byEvent = new Map(
      rows.map((row: { event_id: string; outcome: string; paced_at: Date | null; not_before: Date | null }) => [
        row.event_id,
        row,
      ]),
    );
    expect(ids.map((eventId) => byEvent.get(eventId)?.outcome)).toEqual(ids.map(() => 'started'));
    expect(ids.every((eventId) => byEvent.get(eventId)?.paced_at !== null)).toBe(true);
    // One run per 200 ms: the first at once, each later one due after the one that arrived before it.
    const due = ids.map((eventId) => {
      const row = byEvent.get(eventId)!;
      return (row.not_before ?? row.paced_at!).getTime();
    });
    for (let n = 1; n < due.length; n++) expect(due[n]).toBeGreaterThan(due[n - 1]!);
    await waitFor('the six paced runs are recorded', async () => ((await runsOf(id)).length === 6 ? true : undefined));
  });

  test('a hold past its expiry is recorded expired by the sweep, the metrics count held, released, discarded and expired events, and the retention purger keeps what is still held', async () => {
    const id = await register('held-expiry', 'held.expiry');
    await api('POST', `/v1/activities/${id}/disable`, { when_disabled: { action: 'hold', ttl: '1m' } });
    await send(['evt_x1', 'evt_x2', 'evt_x3'], 'held.expiry');
    const metrics = async () =>
      (
        await stack.api.server.inject({
          method: 'GET',
          url: '/metrics',
          headers: { authorization: `Bearer ${ADMIN}` },
        })
      ).body;
    await waitFor('three events held in the gauge', async () =>
      (await metrics()).includes(`activity_core_events_held{activity="${id}"} 3`) ? true : undefined,
    );
    await api('POST', `/v1/activities/${id}/held-events/discard`, { event_ids: ['evt_x3'] });
    // The hold's end, moved into the past (the ttl's minimum is a minute): the sweep runs every 200 ms here.
    await stack.sql.query(
      `UPDATE event_routes SET expires_at = now() - interval '1 second' WHERE activity_id = $1 AND event_id = 'evt_x1'`,
      [id],
    );
    await waitFor('the expired hold is recorded', async () =>
      (await routeOf('evt_x1', id))?.outcome === 'expired' ? true : undefined,
    );
    expect((await routeOf('evt_x1', id))?.detail).toMatch(/^expired at .+; was held: activity disabled; expires /);
    expect((await routeOf('evt_x2', id))?.outcome).toBe('held');
    // Still stored: an expired hold is recorded, not deleted.
    expect((await api('GET', '/v1/events/evt_x1')).json.routes).toMatchObject([
      { activity_id: id, outcome: 'expired' },
    ]);

    const before = await metrics();
    expect(before).toContain(`activity_core_events_held{activity="${id}"} 1`);
    expect(before).toContain(`activity_core_held_events_total{activity="${id}",reason="discarded"} 1`);
    expect(before).toContain(`activity_core_held_events_total{activity="${id}",reason="expired"} 1`);

    // The retention purger (as if every event were past EVENT_RETENTION_DAYS) forgets routed events, never a held one.
    const database = createDatabase({ url: stack.config.databaseUrl, max: 1 });
    try {
      await createEventsRepository(database.db).purgeRoutedBefore(new Date(Date.now() + 60_000), 1_000);
    } finally {
      await database.close();
    }
    expect((await api('GET', '/v1/events/evt_x2')).json.routes).toMatchObject([{ activity_id: id, outcome: 'held' }]);
    expect((await api('GET', '/v1/events/evt_x1')).status).toBe(404);
    expect((await api('GET', '/v1/events/evt_x3')).status).toBe(404);

    await api('POST', `/v1/activities/${id}/enable`);
    await api('POST', `/v1/activities/${id}/held-events/release`);
    const after = await metrics();
    expect(after).toContain(`activity_core_events_held{activity="${id}"} 0`);
    expect(after).toContain(`activity_core_held_events_total{activity="${id}",reason="released"} 1`);
  });

  test('bad input: a ttl of 0 or past 30 days is 400 naming the field, too many event ids is 400 with the bound, an ingest key is 403, a deleted activity cannot release (409)', async () => {
    const id = await register('held-bad', 'held.bad');
    for (const ttl of ['0s', '31d']) {
      const refused = await api('POST', `/v1/activities/${id}/disable`, { when_disabled: { action: 'hold', ttl } });
      expect(refused.status).toBe(400);
      expect(JSON.stringify(refused.json)).toContain('when_disabled.ttl');
      expect(JSON.stringify(refused.json)).toContain('at most 30d');
    }
    const put = await api('PUT', `/v1/activities/${id}`, {
      name: 'held-bad',
      triggers: [{ type: 'event', event_type: 'held.bad' }],
      tasks: [{ type: 'noop' }],
      when_disabled: { action: 'hold', ttl: '0m' },
    });
    expect(put.status).toBe(400);
    expect(JSON.stringify(put.json)).toContain('when_disabled.ttl');

    const many = Array.from({ length: 1001 }, (_, n) => `evt_${n}`);
    for (const action of ['release', 'discard']) {
      const tooMany = await api('POST', `/v1/activities/${id}/held-events/${action}`, { event_ids: many });
      expect(tooMany.status).toBe(400);
      expect(JSON.stringify(tooMany.json)).toContain('event_ids');
      expect(JSON.stringify(tooMany.json)).toContain('at most 1000 event ids');
    }
    for (const [method, url] of [
      ['POST', `/v1/activities/${id}/held-events/release`],
      ['POST', `/v1/activities/${id}/held-events/discard`],
      ['GET', `/v1/activities/${id}/held-events`],
    ] as const)
      expect((await api(method, url, method === 'POST' ? {} : undefined, INGEST)).status).toBe(403);
    // An id Postgres could never have stored is simply not held.
    expect(
      (await api('POST', `/v1/activities/${id}/held-events/discard`, { event_ids: ['evt\u0000x'] })).json,
    ).toMatchObject({ discarded: 0, not_held: ['evt\u0000x'] });
    const unknown = '00000000-0000-4000-8000-00000000dead';
    expect((await api('POST', `/v1/activities/${unknown}/held-events/release`, {})).status).toBe(404);
    expect((await api('GET', `/v1/activities/${unknown}/held-events`)).status).toBe(404);

    await api('POST', `/v1/activities/${id}/disable`, { when_disabled: { action: 'hold', ttl: '1h' } });
    await send(['evt_b1'], 'held.bad');
    expect((await api('DELETE', `/v1/activities/${id}`)).status).toBe(204);
    const gone = await api('POST', `/v1/activities/${id}/held-events/release`, {});
    expect(gone.status).toBe(409);
    expect(gone.json.detail).toContain('was deleted');
    // A deleted activity's held events can still be listed and discarded.
    expect((await api('GET', `/v1/activities/${id}/held-events`)).json.total).toBe(1);
    expect((await api('POST', `/v1/activities/${id}/held-events/discard`)).json).toMatchObject({
      discarded: 1,
      remaining: 0,
    });
  });
});
