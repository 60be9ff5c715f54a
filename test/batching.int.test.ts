import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { batchRunWorkflowId, emittedEventId, eventRunWorkflowId, runIdFor } from '@activity-core/contracts';
import { recordGoldenHistory } from './golden-histories';
import { startStack, waitFor, type TestStack } from './harness';

/**
 * Batching on the real stack (docs/coalescing.md, "Batching"): the events of a
 * key are collected into batches of at most `max_size`, each batch is one run
 * over the list of its events, and every member is recorded `batched` into its
 * batch's run, once.
 */
let stack: TestStack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

async function register(body: object): Promise<{ id: string }> {
  const response = await stack.api.server.inject({ method: 'POST', url: '/v1/activities', payload: body });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

async function post(eventType: string, eventId: string, data: object) {
  const response = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/events',
    payload: { event_id: eventId, event_type: eventType, source: 'shop', occurred_at: '2026-03-01T09:00:00Z', data },
  });
  expect(response.statusCode, response.body).toBe(202);
  return response.json();
}

/** The input a run was started with, from its workflow's start event in Temporal. */
async function runInput(workflowId: string): Promise<any> {
  const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
  const payload = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
  return JSON.parse(Buffer.from(payload.data!).toString('utf8'));
}

interface Route {
  event_id: string;
  outcome: string;
  workflow_id: string;
  run_id: string;
  detail: string;
  window_id: string | null;
  window_position: number | null;
}

async function routesOf(activityId: string): Promise<Route[]> {
  const result = await stack.sql.query(
    `SELECT event_id, outcome, workflow_id, run_id, detail, window_id, window_position FROM event_routes
     WHERE activity_id = $1 ORDER BY event_id`,
    [activityId],
  );
  return result.rows;
}

/** Waits until every one of `events` routes is `batched` and `runs` runs succeeded; returns the runs by workflow id. */
async function settled(activityId: string, events: number, runs: number): Promise<string[]> {
  return await waitFor(
    `${events} events batched into ${runs} finished runs`,
    async () => {
      const routes = await routesOf(activityId);
      const done = await stack.sql.query(
        `SELECT workflow_id FROM activity_runs WHERE activity_id = $1 AND status = 'succeeded' ORDER BY workflow_id`,
        [activityId],
      );
      return routes.length === events &&
        routes.every((route) => route.outcome === 'batched') &&
        done.rows.length >= runs
        ? done.rows.map((row) => row.workflow_id as string)
        : undefined;
    },
    90_000,
  );
}

/** Members per run, from the decision log: every route names its batch's run. */
function membersPerRun(routes: Route[]): Map<string, Route[]> {
  const byRun = new Map<string, Route[]>();
  for (const route of routes) byRun.set(route.workflow_id, [...(byRun.get(route.workflow_id) ?? []), route]);
  return byRun;
}

describe('batching', () => {
  test('120 events of one key with max_size 50 become 3 runs of 50, 50 and 20 events, each event recorded once', async () => {
    const activity = await register({
      name: 'batch-120',
      triggers: [
        { type: 'event', event_type: 'order.updated', batch: { key: 'data.shop', max_size: 50, timeout: '3s' } },
      ],
      tasks: [{ type: 'noop' }],
    });
    const ids = Array.from({ length: 120 }, (_, n) => `ord_${String(n + 1).padStart(3, '0')}`);
    for (const [n, id] of ids.entries()) {
      const answer = await post('order.updated', id, { shop: 's-1', n: n + 1 });
      expect(answer.status).toBe('accepted');
    }
    // A redelivery is a duplicate at accept: it never joins a batch a second time.
    expect((await post('order.updated', 'ord_010', { shop: 's-1', n: 10 })).status).toBe('duplicate');

    const runs = await settled(activity.id, 120, 3);
    const windows = await stack.sql.query(
      `SELECT id, state, member_count, first_event_id, last_event_id, run_workflow_id, workflow_id FROM coalesce_windows
       WHERE activity_id = $1 ORDER BY opened_at, first_event_id`,
      [activity.id],
    );
    expect(windows.rows.map((row) => [row.state, row.member_count, row.first_event_id, row.last_event_id])).toEqual([
      ['closed', 50, 'ord_001', 'ord_050'],
      ['closed', 50, 'ord_051', 'ord_100'],
      ['closed', 20, 'ord_101', 'ord_120'],
    ]);
    const runIds = windows.rows.map((row) => batchRunWorkflowId(activity.id, row.id));
    expect(windows.rows.map((row) => row.run_workflow_id)).toEqual(runIds);
    expect([...runs].sort()).toEqual([...runIds].sort());

    // The decision log: every member once, in its batch's run, with its place in the batch.
    const routes = await routesOf(activity.id);
    expect(routes).toHaveLength(120);
    const byRun = membersPerRun(routes);
    expect(runIds.map((id) => byRun.get(id)?.length)).toEqual([50, 50, 20]);
    for (const [index, runWorkflowId] of runIds.entries()) {
      const members = byRun.get(runWorkflowId)!;
      const size = members.length;
      expect(members.every((route) => route.run_id === runIdFor(runWorkflowId))).toBe(true);
      expect(members.map((route) => route.window_position).sort((a, b) => a! - b!)).toEqual(
        Array.from({ length: size }, (_, k) => k + 1),
      );
      for (const route of members)
        expect(route.detail).toContain(`in batch ${windows.rows[index].id} (${route.window_position} of ${size}`);
    }
    expect(byRun.get(runIds[2]!)!.every((route) => route.detail.includes('timeout'))).toBe(true);
    expect(byRun.get(runIds[0]!)!.some((route) => route.detail.includes('max_size 50'))).toBe(true);

    // Each run's input: its members in arrival order, `event` the last, and the batch's summary.
    for (const [index, runWorkflowId] of runIds.entries()) {
      const input = await runInput(runWorkflowId);
      const expected = ids.slice(index * 50, index * 50 + 50);
      expect(input.trigger.events.map((event: { event_id: string }) => event.event_id)).toEqual(expected);
      expect(input.trigger.event.event_id).toBe(expected[expected.length - 1]);
      expect(input.trigger.coalesced).toEqual({
        kind: 'batch',
        window_id: windows.rows[index].id,
        count: expected.length,
        first_event_id: expected[0],
        last_event_id: expected[expected.length - 1],
      });
    }

    // GET /v1/events/{id} names the batch's run.
    const log = await stack.api.server.inject({ method: 'GET', url: '/v1/events/ord_077' });
    expect(log.statusCode, log.body).toBe(200);
    expect(log.json().routes[0]).toMatchObject({
      outcome: 'batched',
      workflow_id: runIds[1],
      run_id: runIdFor(runIds[1]!),
      detail: expect.stringContaining(`in batch ${windows.rows[1].id} (27 of 50`),
    });

    const metrics = await stack.api.server.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toContain(`activity_core_events_merged_total{activity="${activity.id}",reason="batch"} 120`);
    expect(metrics.body).toContain(`activity_core_coalesce_windows_open{activity="${activity.id}",kind="batch"} 0`);
    // Each batch's workflow ended with the run it became.
    for (const [index, row] of windows.rows.entries())
      expect(await stack.client.workflow.getHandle(row.workflow_id).result()).toEqual({
        runWorkflowId: runIds[index],
        members: row.member_count,
      });
    // The shape of a batch's workflow woken by the event that filled it (the wake signal, ADR 0070).
    const woken = stack.client.workflow.getHandle(windows.rows[0].workflow_id);
    await recordGoldenHistory('coalesce-window-workflow-batch', await woken.fetchHistory(), woken.workflowId);
  });

  test('two keys make separate batches', async () => {
    const activity = await register({
      name: 'batch-two-keys',
      triggers: [
        { type: 'event', event_type: 'order.keyed', batch: { key: 'data.shop', max_size: 10, timeout: '60s' } },
      ],
      tasks: [{ type: 'noop' }],
    });
    for (let n = 1; n <= 10; n++) {
      await post('order.keyed', `keyed_a_${n}`, { shop: 'a', n });
      await post('order.keyed', `keyed_b_${n}`, { shop: 'b', n });
    }
    // Both batches are full: each closed with its tenth event, well before the timeout.
    await settled(activity.id, 20, 2);
    const byRun = membersPerRun(await routesOf(activity.id));
    expect(byRun.size).toBe(2);
    for (const members of byRun.values()) {
      expect(members).toHaveLength(10);
      expect(new Set(members.map((route) => route.event_id.slice(0, 'keyed_a'.length))).size).toBe(1);
    }
  });

  test('a batch that is not full closes at its timeout, and its tasks see `events` in templates and conditions', async () => {
    const activity = await register({
      name: 'batch-timeout',
      triggers: [{ type: 'event', event_type: 'order.slow', batch: { max_size: 100, timeout: '2s' } }],
      tasks: [
        {
          type: 'emit_event',
          if: 'size(events) == 3 && events[0].data.n == 1',
          config: {
            event_type: 'digest.sent',
            data: { count: '{{ events.length }}', first: '{{ events.0.event_id }}', last: '{{ event.event_id }}' },
          },
        },
        // Once per event of the batch.
        {
          type: 'emit_event',
          for_each: 'events',
          config: { event_type: 'digest.line', data: { n: '{{ item.data.n }}' } },
        },
      ],
    });
    for (let n = 1; n <= 3; n++) {
      const answer = await post('order.slow', `slow_${n}`, { n });
      // Accepted and waiting in its batch.
      expect(answer.runs[0]).toMatchObject({ status: 'coalescing' });
    }
    const [run] = await settled(activity.id, 3, 1);
    expect(run).toMatch(/^activity-[0-9a-f-]{36}:batch:[0-9a-f-]{36}$/);
    const routes = await routesOf(activity.id);
    expect(routes.map((route) => route.detail)).toEqual([
      expect.stringMatching(/\(1 of 3; closed by timeout\)/),
      expect.stringMatching(/\(2 of 3; closed by timeout\)/),
      expect.stringMatching(/\(3 of 3; closed by timeout\): started run activity-/),
    ]);
    const emitted = await stack.sql.query('SELECT payload FROM events WHERE event_id = $1', [
      emittedEventId(runIdFor(run!), 0),
    ]);
    expect(emitted.rows[0]?.payload.data).toEqual({ count: 3, first: 'slow_1', last: 'slow_3' });
    const lines = await stack.sql.query(
      'SELECT event_id, payload FROM events WHERE event_id = ANY($1) ORDER BY event_id',
      [[0, 1, 2].map((item) => emittedEventId(runIdFor(run!), 1, item))],
    );
    expect(lines.rows.map((row) => row.payload.data)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
  });

  test('an event that would take a batch past max_bytes closes it without itself and opens the next batch', async () => {
    const activity = await register({
      name: 'batch-bytes',
      triggers: [{ type: 'event', event_type: 'order.big', batch: { max_size: 100, timeout: '2s', max_bytes: 2048 } }],
      tasks: [{ type: 'noop' }],
    });
    // Each envelope is a little over 800 bytes of JSON: two fit in 2048, a third would not.
    for (let n = 1; n <= 5; n++) await post('order.big', `big_${n}`, { n, pad: 'x'.repeat(700) });
    await settled(activity.id, 5, 3);
    const windows = await stack.sql.query(
      `SELECT member_count, first_event_id, member_bytes FROM coalesce_windows WHERE activity_id = $1
       ORDER BY opened_at, first_event_id`,
      [activity.id],
    );
    expect(windows.rows.map((row) => [row.first_event_id, row.member_count])).toEqual([
      ['big_1', 2],
      ['big_3', 2],
      ['big_5', 1],
    ]);
    expect(windows.rows.every((row) => Number(row.member_bytes) <= 2048)).toBe(true);
    const routes = await routesOf(activity.id);
    expect(routes.find((route) => route.event_id === 'big_1')!.detail).toContain('max_bytes');
  });

  test('past the open-batches bound an event of a new key runs alone, and its route says why', async () => {
    const activity = await register({
      name: 'batch-bound',
      triggers: [
        { type: 'event', event_type: 'order.bound', batch: { key: 'data.shop', max_size: 10, timeout: '1h' } },
      ],
      tasks: [{ type: 'noop' }],
    });
    // 10,000 open batches of other keys (rows only: the bound counts rows, not workflows).
    await stack.sql.query(
      `INSERT INTO coalesce_windows (id, activity_id, kind, key, workflow_id, period_ms, due_at, deadline_at,
         first_event_id, last_event_id, last_activity_version)
       SELECT gen_random_uuid(), $1, 'batch', 'k' || n, 'coalesce-fake-' || n, 3600000, now() + interval '1 hour',
         now() + interval '1 hour', 'fake_' || n, 'fake_' || n, 1
       FROM generate_series(1, 10000) AS n`,
      [activity.id],
    );
    const answer = await post('order.bound', 'bound_1', { shop: 'new-shop' });
    expect(answer.runs[0]).toMatchObject({
      status: 'started',
      workflow_id: eventRunWorkflowId(activity.id, 'bound_1'),
    });
    const [route] = await routesOf(activity.id);
    expect(route).toMatchObject({ outcome: 'started', window_id: null });
    expect(route!.detail).toBe('ran alone: the activity has 10000 open batches (the limit)');
    await stack.sql.query('DELETE FROM coalesce_windows WHERE activity_id = $1', [activity.id]);
  });

  test('a definition changed from debounce to batch while a debounce window is open: events of its key run alone, saying why', async () => {
    const definition = (coalescing: object) => ({
      name: 'debounce-then-batch',
      triggers: [{ type: 'event', event_type: 'order.changed', ...coalescing }],
      tasks: [{ type: 'noop' }],
    });
    const activity = await register(definition({ debounce: { period: '1h' } }));
    await post('order.changed', 'chg_0', { n: 0 });
    const changed = await stack.api.server.inject({
      method: 'PUT',
      url: `/v1/activities/${activity.id}`,
      payload: definition({ batch: { max_size: 10, timeout: '1h' } }),
    });
    expect(changed.statusCode, changed.body).toBe(200);
    let n = 0;
    const alone = await waitFor('an event routed on the batch version', async () => {
      n += 1;
      await post('order.changed', `chg_${n}`, { n });
      const routes = await routesOf(activity.id);
      return routes.find((route) => route.detail?.startsWith('ran alone'));
    });
    expect(alone).toMatchObject({ outcome: 'started', window_id: null });
    expect(alone.workflow_id).toBe(eventRunWorkflowId(activity.id, alone.event_id));
    expect(alone.detail).toMatch(
      /^ran alone: the key's open window [0-9a-f-]{36} is a debounce window \(the definition changed\)$/,
    );
  });

  test('a batch the server cannot accept is refused naming the field, and nothing is stored', async () => {
    const cases: Array<[object, string]> = [
      [{ batch: { max_size: 0, timeout: '1m' } }, 'triggers[0].batch.max_size'],
      [{ batch: { max_size: 1001, timeout: '1m' } }, 'triggers[0].batch.max_size'],
      [{ batch: { max_size: 10, timeout: '0s' } }, 'triggers[0].batch.timeout'],
      [{ batch: { max_size: 10, timeout: '8d' } }, 'triggers[0].batch.timeout'],
      [{ batch: { max_size: 10 } }, 'triggers[0].batch.timeout'],
      [{ batch: { max_size: 10, timeout: '1m', max_bytes: 2_000_000 } }, 'triggers[0].batch.max_bytes'],
      [{ batch: { max_size: 10, timeout: '1m', key: 'data.' } }, 'triggers[0].batch.key'],
      [{ batch: { max_size: 10, timeout: '1m' }, debounce: { period: '1s' } }, 'triggers[0].batch'],
    ];
    for (const [fields, field] of cases) {
      const response = await stack.api.server.inject({
        method: 'POST',
        url: '/v1/activities',
        payload: {
          name: 'batch-bad',
          triggers: [{ type: 'event', event_type: 'x.y', ...fields }],
          tasks: [{ type: 'noop' }],
        },
      });
      expect(response.statusCode, JSON.stringify(fields)).toBe(400);
      expect(JSON.stringify(response.json()), JSON.stringify(fields)).toContain(field);
    }
    const paced = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'batch-bad',
        triggers: [{ type: 'event', event_type: 'x.y', batch: { max_size: 10, timeout: '1m' } }],
        throttle: { limit: 10, period: '1s' },
        tasks: [{ type: 'noop' }],
      },
    });
    expect(paced.statusCode).toBe(400);
    expect(paced.body).toContain('triggers[0].batch');
    const stored = await stack.sql.query(`SELECT 1 FROM activity_definitions WHERE name = 'batch-bad'`);
    expect(stored.rowCount).toBe(0);
  });
});
