import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId, runIdFor } from '@activity-core/contracts';
import { recordGoldenHistory } from './golden-histories';
import { startStack, waitFor, type TestStack } from './harness';

/**
 * Debounce on the real stack (docs/coalescing.md): a burst of events per key
 * becomes one run with the burst's last event, and every other event of the
 * burst is recorded `merged` into that run.
 */
let stack: TestStack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function register(body: object): Promise<{ id: string }> {
  const response = await stack.api.server.inject({ method: 'POST', url: '/v1/activities', payload: body });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

async function post(eventType: string, eventId: string, data: object) {
  const response = await stack.api.server.inject({
    method: 'POST',
    url: '/v1/events',
    payload: { event_id: eventId, event_type: eventType, source: 'crm', occurred_at: '2026-03-01T09:00:00Z', data },
  });
  expect(response.statusCode, response.body).toBe(202);
  return response.json();
}

/** The event a run was started with, from its workflow's start input in Temporal. */
async function runInput(workflowId: string): Promise<any> {
  const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
  const payload = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
  return JSON.parse(Buffer.from(payload.data!).toString('utf8'));
}

async function routesOf(
  activityId: string,
): Promise<Array<{ event_id: string; outcome: string; workflow_id: string; detail: string }>> {
  const result = await stack.sql.query(
    'SELECT event_id, outcome, workflow_id, detail FROM event_routes WHERE activity_id = $1 ORDER BY event_id',
    [activityId],
  );
  return result.rows;
}

async function settledRuns(
  activityId: string,
  expected: number,
): Promise<Array<{ workflow_id: string; status: string }>> {
  return await waitFor(
    `${expected} finished runs`,
    async () => {
      const runs = await stack.sql.query(
        'SELECT workflow_id, status FROM activity_runs WHERE activity_id = $1 ORDER BY workflow_id',
        [activityId],
      );
      const routes = await routesOf(activityId);
      const open = routes.some((route) => route.outcome === 'coalescing' || route.outcome === 'pending');
      return runs.rows.length >= expected && runs.rows.every((run) => run.status === 'succeeded') && !open
        ? runs.rows
        : undefined;
    },
    60_000,
  );
}

describe('trailing debounce', () => {
  test('50 events of one key within 2 s under a 1 s debounce start one run with the last event; the other 49 are merged into it', async () => {
    const activity = await register({
      name: 'debounce-one-key',
      triggers: [
        {
          type: 'event',
          event_type: 'contact.updated',
          debounce: { key: 'data.contact', period: '1s', max_wait: '30s' },
        },
      ],
      tasks: [{ type: 'noop' }],
    });
    for (let n = 1; n <= 50; n++) {
      const answer = await post('contact.updated', `evt_one_${String(n).padStart(2, '0')}`, { contact: 'c-1', n });
      expect(answer.status).toBe('accepted');
      await sleep(40);
    }
    // A redelivery inside the burst is a duplicate at accept: it never touches the window.
    expect((await post('contact.updated', 'evt_one_10', { contact: 'c-1', n: 10 })).status).toBe('duplicate');

    const runs = await settledRuns(activity.id, 1);
    const runWorkflowId = eventRunWorkflowId(activity.id, 'evt_one_50');
    expect(runs).toEqual([{ workflow_id: runWorkflowId, status: 'succeeded' }]);
    const input = await runInput(runWorkflowId);
    expect(input.trigger.event.data).toEqual({ contact: 'c-1', n: 50 });
    expect(input.trigger.coalesced).toMatchObject({
      kind: 'debounce',
      count: 50,
      first_event_id: 'evt_one_01',
      last_event_id: 'evt_one_50',
    });

    const routes = await routesOf(activity.id);
    expect(routes).toHaveLength(50);
    expect(routes.filter((route) => route.outcome === 'merged')).toHaveLength(49);
    expect(
      routes.filter((route) => route.outcome === 'merged').every((route) => route.workflow_id === runWorkflowId),
    ).toBe(true);
    expect(routes.find((route) => route.event_id === 'evt_one_50')).toMatchObject({
      outcome: 'started',
      workflow_id: runWorkflowId,
    });

    // The decision log says which run each event went into, and why.
    const log = await stack.api.server.inject({ method: 'GET', url: '/v1/events/evt_one_07' });
    expect(log.statusCode, log.body).toBe(200);
    const route = log.json().routes[0];
    expect(route).toMatchObject({ outcome: 'merged', workflow_id: runWorkflowId, run_id: runIdFor(runWorkflowId) });
    expect(route.detail).toContain('debounce');

    const windows = await stack.sql.query(
      'SELECT state, member_count, run_workflow_id, workflow_id FROM coalesce_windows WHERE activity_id = $1',
      [activity.id],
    );
    expect(windows.rows).toEqual([
      { state: 'closed', member_count: 50, run_workflow_id: runWorkflowId, workflow_id: expect.any(String) },
    ]);
    // Metrics: the merged events and no window left open.
    const metrics = await stack.api.server.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toContain(`activity_core_events_merged_total{activity="${activity.id}",reason="debounce"} 49`);
    expect(metrics.body).toContain(`activity_core_coalesce_windows_open{activity="${activity.id}",kind="debounce"} 0`);
    // The window's workflow ended with the run it became (it looked again when later events pushed its due time).
    const windowWorkflow = stack.client.workflow.getHandle(windows.rows[0].workflow_id);
    expect(await windowWorkflow.result()).toEqual({ runWorkflowId, members: 50 });
    await recordGoldenHistory(
      'coalesce-window-workflow',
      await windowWorkflow.fetchHistory(),
      windowWorkflow.workflowId,
    );
  });

  test("two keys interleaved are two bursts: two runs, each with its own key's last event", async () => {
    const activity = await register({
      name: 'debounce-two-keys',
      triggers: [{ type: 'event', event_type: 'contact.changed', debounce: { key: 'data.contact', period: '1s' } }],
      tasks: [{ type: 'noop' }],
    });
    for (let n = 1; n <= 20; n++) {
      await post('contact.changed', `evt_two_${String(n).padStart(2, '0')}`, {
        contact: n % 2 === 0 ? 'even' : 'odd',
        n,
      });
      await sleep(30);
    }
    const runs = await settledRuns(activity.id, 2);
    expect(runs.map((run) => run.workflow_id)).toEqual(
      [eventRunWorkflowId(activity.id, 'evt_two_19'), eventRunWorkflowId(activity.id, 'evt_two_20')].sort(),
    );
    expect((await runInput(eventRunWorkflowId(activity.id, 'evt_two_19'))).trigger.event.data).toEqual({
      contact: 'odd',
      n: 19,
    });
    const routes = await routesOf(activity.id);
    expect(routes.filter((route) => route.outcome === 'merged')).toHaveLength(18);
    expect(routes.filter((route) => route.outcome === 'started')).toHaveLength(2);
  });

  test('events a quiet period apart are separate bursts, each its own run', async () => {
    const activity = await register({
      name: 'debounce-quiet',
      triggers: [{ type: 'event', event_type: 'sensor.read', debounce: { period: '1s' } }],
      tasks: [{ type: 'noop' }],
    });
    await post('sensor.read', 'evt_quiet_1', { v: 1 });
    await settledRuns(activity.id, 1);
    await post('sensor.read', 'evt_quiet_2', { v: 2 });
    const runs = await settledRuns(activity.id, 2);
    expect(runs.map((run) => run.workflow_id).sort()).toEqual(
      [eventRunWorkflowId(activity.id, 'evt_quiet_1'), eventRunWorkflowId(activity.id, 'evt_quiet_2')].sort(),
    );
  });

  test('leading mode: the first event of a burst runs at once, the rest are merged into its run at accept; after a quiet period the next event runs again', async () => {
    const activity = await register({
      name: 'debounce-leading',
      triggers: [
        { type: 'event', event_type: 'order.updated', debounce: { key: 'data.order', period: '1s', mode: 'leading' } },
      ],
      tasks: [{ type: 'noop' }],
    });
    const first = await post('order.updated', 'evt_lead_01', { order: 'o-1', n: 1 });
    expect(first.runs[0]).toMatchObject({
      status: 'started',
      workflow_id: eventRunWorkflowId(activity.id, 'evt_lead_01'),
    });
    for (let n = 2; n <= 10; n++) {
      await post('order.updated', `evt_lead_${String(n).padStart(2, '0')}`, { order: 'o-1', n });
      await sleep(30);
    }
    const firstRun = eventRunWorkflowId(activity.id, 'evt_lead_01');
    await settledRuns(activity.id, 1);
    expect((await runInput(firstRun)).trigger.event.data).toEqual({ order: 'o-1', n: 1 });
    const routes = await routesOf(activity.id);
    expect(routes.filter((route) => route.outcome === 'merged' && route.workflow_id === firstRun)).toHaveLength(9);
    const log = await stack.api.server.inject({ method: 'GET', url: '/v1/events/evt_lead_05' });
    expect(log.json().routes[0]).toMatchObject({
      outcome: 'merged',
      workflow_id: firstRun,
      run_id: runIdFor(firstRun),
    });
    // Quiet for longer than the period: the next event opens a new window and runs at once.
    await sleep(1_300);
    await post('order.updated', 'evt_lead_11', { order: 'o-1', n: 11 });
    const runs = await settledRuns(activity.id, 2);
    expect(runs.map((run) => run.workflow_id).sort()).toEqual(
      [firstRun, eventRunWorkflowId(activity.id, 'evt_lead_11')].sort(),
    );
  });

  test("a definition changed while a window is open: the window's run uses the version its last event was routed on", async () => {
    const definition = (tasks: object[]) => ({
      name: 'debounce-changed',
      triggers: [{ type: 'event', event_type: 'contact.edited', debounce: { period: '1s' } }],
      tasks,
    });
    const activity = await register(definition([{ type: 'noop' }]));
    await post('contact.edited', 'evt_chg_1', { n: 1 });
    const changed = await stack.api.server.inject({
      method: 'PUT',
      url: `/v1/activities/${activity.id}`,
      payload: definition([{ type: 'noop' }, { type: 'noop' }]),
    });
    expect(changed.statusCode, changed.body).toBe(200);
    await waitFor('the new version to be routed on', async () => {
      await post('contact.edited', `evt_chg_${Date.now()}`, { n: 2 });
      const last = await stack.sql.query(
        'SELECT last_activity_version FROM coalesce_windows WHERE activity_id = $1 AND state = $2',
        [activity.id, 'open'],
      );
      return last.rows[0]?.last_activity_version === 2 ? true : undefined;
    });
    const runs = await settledRuns(activity.id, 1);
    const input = await runInput(runs[0]!.workflow_id);
    expect(input.activity.version).toBe(2);
    const versions = await stack.sql.query('SELECT activity_version FROM activity_runs WHERE activity_id = $1', [
      activity.id,
    ]);
    expect(versions.rows).toEqual([{ activity_version: 2 }]);
  });

  test('a debounce the server cannot accept is refused naming the field, and nothing is stored', async () => {
    const cases: Array<[object, string]> = [
      [{ period: '0s' }, 'triggers[0].debounce.period'],
      [{ period: '8d' }, 'triggers[0].debounce.period'],
      [{ period: '10s', max_wait: '5s' }, 'triggers[0].debounce.max_wait'],
      [{ period: '1s', key: 'data.' }, 'triggers[0].debounce.key'],
      [{ period: '1s', mode: 'first' }, 'triggers[0].debounce.mode'],
      [{ period: '1s', batch: { max_size: 10 } }, 'triggers[0].debounce'],
    ];
    for (const [debounce, field] of cases) {
      const response = await stack.api.server.inject({
        method: 'POST',
        url: '/v1/activities',
        payload: {
          name: 'debounce-bad',
          triggers: [{ type: 'event', event_type: 'x.y', debounce }],
          tasks: [{ type: 'noop' }],
        },
      });
      expect(response.statusCode, JSON.stringify(debounce)).toBe(400);
      expect(JSON.stringify(response.json()), JSON.stringify(debounce)).toContain(field);
    }
    const stored = await stack.sql.query(`SELECT 1 FROM activity_definitions WHERE name = 'debounce-bad'`);
    expect(stored.rowCount).toBe(0);
  });
});
