import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId, replayWorkflowId, runIdFor } from '@activity-core/contracts';
import { startStack, waitFor, type TestStack } from './harness';

const ADMIN = 'replay-admin-key-0123456789abcdefghijkl';
const INGEST = 'replay-ingest-key-0123456789abcdefghijk';

const event = (id: string, type: string, data: Record<string, unknown> = {}) => ({
  event_id: id,
  event_type: type,
  source: 'tests',
  occurred_at: '2026-03-01T09:00:00Z',
  data,
});

describe('replaying accepted events against today’s definitions', () => {
  let stack: TestStack;
  const since = new Date(Date.now() - 60_000).toISOString();

  beforeAll(async () => {
    stack = await startStack({ env: { API_KEYS: ADMIN, INGEST_KEYS: INGEST, RATE_LIMIT_MAX: '0' } });
  });
  afterAll(async () => {
    await stack?.close();
  });

  const api = async (
    method: 'GET' | 'POST' | 'PUT',
    url: string,
    payload?: unknown,
    headers: Record<string, string> = {},
    key: string = ADMIN,
  ) => {
    const response = await stack.api.server.inject({
      method,
      url,
      headers: { authorization: `Bearer ${key}`, ...headers },
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return { status: response.statusCode, json: response.json() };
  };

  const runsOf = async (activityId: string): Promise<{ workflow_id: string; status: string }[]> =>
    (
      await stack.sql.query(
        'SELECT workflow_id, status FROM activity_runs WHERE activity_id = $1 ORDER BY workflow_id',
        [activityId],
      )
    ).rows;

  const bulkDone = (id: string) =>
    waitFor(`bulk replay ${id} completed`, async () => {
      const record = await api('GET', `/v1/events/replay/${id}`);
      return record.json.status === 'completed' ? record.json : undefined;
    });

  test('an activity registered after 20 events arrived: a bulk if_no_runs replay starts 20 runs, and repeating it starts none', async () => {
    for (let n = 0; n < 20; n++)
      expect((await api('POST', '/v1/events', event(`evt_late_${n}`, 'replay.late'))).status).toBe(202);
    const created = await api('POST', '/v1/activities', {
      name: 'replay-late',
      triggers: [{ type: 'event', event_type: 'replay.late' }],
      tasks: [{ type: 'noop' }],
    });
    expect(created.status).toBe(201);
    const activityId = created.json.id as string;

    const filter = {
      event_type: 'replay.*',
      outcome: 'unmatched',
      from: since,
      to: new Date(Date.now() + 60_000).toISOString(),
    };
    const dry = await api('POST', '/v1/events/replay', { filter, dry_run: true });
    expect(dry).toMatchObject({ status: 200, json: { dry_run: true, total: 20, over_cap: false } });
    // A dry run records nothing.
    expect((await stack.sql.query('SELECT count(*)::int AS n FROM bulk_replays')).rows[0].n).toBe(0);

    const accepted = await api('POST', '/v1/events/replay', { filter });
    expect(accepted.status).toBe(202);
    expect(accepted.json).toMatchObject({ mode: 'if_no_runs', total: 20 });
    const done = await bulkDone(accepted.json.id as string);
    expect(done).toMatchObject({ processed: 20, started: 20, skipped: 0 });
    await waitFor('20 runs succeeded', async () => {
      const runs = await runsOf(activityId);
      return runs.length === 20 && runs.every((run) => run.status === 'succeeded') ? runs : undefined;
    });
    expect((await runsOf(activityId)).map((run) => run.workflow_id)).toEqual(
      Array.from({ length: 20 }, (_, n) => eventRunWorkflowId(activityId, `evt_late_${n}`)).sort(),
    );
    // The decision log names the replay on the route it opened.
    const stored = await api('GET', '/v1/events/evt_late_3');
    expect(stored.json.routing_state).toBe('routed');
    expect(stored.json.routes).toEqual([
      expect.objectContaining({
        activity_id: activityId,
        outcome: 'started',
        detail: expect.stringMatching(/^replayed \(if_no_runs\) by api_key:/),
      }),
    ]);

    // The same request again (no key: the request is its key) is the same bulk replay.
    const again = await api('POST', '/v1/events/replay', { filter });
    expect(again.json).toMatchObject({ id: accepted.json.id, status: 'completed', started: 20 });
    // A new bulk replay of every event over them starts nothing: each already ran.
    const second = await api(
      'POST',
      '/v1/events/replay',
      { filter: { ...filter, outcome: 'any' } },
      { 'idempotency-key': 'late-2' },
    );
    expect(second.status).toBe(202);
    expect(await bulkDone(second.json.id as string)).toMatchObject({
      processed: 20,
      started: 0,
      skipped: 20,
      skipped_reasons: { already_ran: 20 },
    });
    expect(await runsOf(activityId)).toHaveLength(20);
  });

  test('a filter fixed after it rejected an event: replaying the event starts its run once, a second replay answers already_ran', async () => {
    const definition = (filter: string) => ({
      name: 'replay-filter',
      triggers: [{ type: 'event', event_type: 'replay.filter', filter }],
      tasks: [{ type: 'noop' }],
    });
    const created = await api('POST', '/v1/activities', definition('data.amount > 100'));
    const activityId = created.json.id as string;
    const sent = await api('POST', '/v1/events', event('evt_filter_1', 'replay.filter', { amount: 50 }));
    expect(sent.json.filtered).toEqual([expect.objectContaining({ status: 'filtered' })]);
    // Nothing matches yet: the replay re-plans on today's (unfixed) filter and starts nothing.
    const early = await api('POST', '/v1/events/evt_filter_1/replay', {});
    expect(early).toMatchObject({
      status: 200,
      json: { runs: [], filtered: [expect.objectContaining({ activity_id: activityId })] },
    });

    expect((await api('PUT', `/v1/activities/${activityId}`, definition('data.amount > 10'))).status).toBe(200);
    const replayed = await api('POST', '/v1/events/evt_filter_1/replay', { mode: 'if_no_runs' });
    const workflowId = eventRunWorkflowId(activityId, 'evt_filter_1');
    expect(replayed).toMatchObject({
      status: 200,
      json: {
        mode: 'if_no_runs',
        runs: [{ activity_id: activityId, workflow_id: workflowId, status: 'started' }],
        filtered: [],
      },
    });
    const twice = await api('POST', '/v1/events/evt_filter_1/replay');
    expect(twice.json.runs).toEqual([expect.objectContaining({ workflow_id: workflowId, status: 'already_ran' })]);
    const stored = await api('GET', '/v1/events/evt_filter_1');
    expect(stored.json.routes[0]).toMatchObject({ outcome: 'started', activity_version: 2 });
    expect(stored.json.routes[0].detail).toMatch(/replayed \(if_no_runs\).*; was filtered: /);
    await waitFor('the run succeeded', async () =>
      (await runsOf(activityId))[0]?.status === 'succeeded' ? true : undefined,
    );
    expect(await runsOf(activityId)).toHaveLength(1);
  });

  test('an event a rate limit dropped is replayed once the limit is lifted: one run, and a second replay answers already_ran', async () => {
    const definition = (paced: boolean) => ({
      name: 'replay-dropped',
      triggers: [{ type: 'event', event_type: 'replay.dropped' }],
      tasks: [{ type: 'noop' }],
      ...(paced ? { rate_limit: { limit: 1, period: '1h' } } : {}),
    });
    const created = await api('POST', '/v1/activities', definition(true));
    const activityId = created.json.id as string;
    expect((await api('POST', '/v1/events', event('evt_dropped_1', 'replay.dropped'))).status).toBe(202);
    expect((await api('POST', '/v1/events', event('evt_dropped_2', 'replay.dropped'))).status).toBe(202);
    const dropped = await api('GET', '/v1/events/evt_dropped_2');
    expect(dropped.json.routes[0]).toMatchObject({ outcome: 'dropped' });

    // Still limited: the replay is paced again on today's definition and dropped again, recorded.
    const early = await api('POST', '/v1/events/evt_dropped_2/replay', {});
    expect(early.status).toBe(200);
    const again = await api('GET', '/v1/events/evt_dropped_2');
    expect(again.json.routes[0]).toMatchObject({ outcome: 'dropped' });
    expect(again.json.routes[0].detail).toMatch(/rate_limit/);

    expect((await api('PUT', `/v1/activities/${activityId}`, definition(false))).status).toBe(200);
    const workflowId = eventRunWorkflowId(activityId, 'evt_dropped_2');
    const replayed = await api('POST', '/v1/events/evt_dropped_2/replay', {});
    expect(replayed.json.runs).toEqual([
      expect.objectContaining({ activity_id: activityId, workflow_id: workflowId, status: 'started' }),
    ]);
    const twice = await api('POST', '/v1/events/evt_dropped_2/replay');
    expect(twice.json.runs).toEqual([expect.objectContaining({ workflow_id: workflowId, status: 'already_ran' })]);
    await waitFor('both runs succeeded', async () => {
      const runs = await runsOf(activityId);
      return runs.length === 2 && runs.every((run) => run.status === 'succeeded') ? runs : undefined;
    });
    expect((await runsOf(activityId)).map((run) => run.workflow_id)).toEqual(
      [eventRunWorkflowId(activityId, 'evt_dropped_1'), workflowId].sort(),
    );
  });

  test('a forced replay of a succeeded run’s event starts one new run linked to it; the same key again starts nothing', async () => {
    const created = await api('POST', '/v1/activities', {
      name: 'replay-force',
      triggers: [{ type: 'event', event_type: 'replay.force' }],
      tasks: [{ type: 'noop' }],
    });
    const activityId = created.json.id as string;
    await api('POST', '/v1/events', event('evt_force_1', 'replay.force'));
    const original = runIdFor(eventRunWorkflowId(activityId, 'evt_force_1'));
    await waitFor('the original succeeded', async () =>
      (await api('GET', `/v1/runs/${original}`)).json.status === 'succeeded' ? true : undefined,
    );

    const forced = await api(
      'POST',
      '/v1/events/evt_force_1/replay',
      { mode: 'force' },
      { 'idempotency-key': 'force-1' },
    );
    const workflowId = replayWorkflowId(original, 1);
    expect(forced).toMatchObject({
      status: 200,
      json: {
        mode: 'force',
        runs: [
          { workflow_id: workflowId, run_id: runIdFor(workflowId), replay_of: original, attempt: 1, status: 'started' },
        ],
      },
    });
    const repeated = await api(
      'POST',
      '/v1/events/evt_force_1/replay',
      { mode: 'force' },
      { 'idempotency-key': 'force-1' },
    );
    expect(repeated.json.runs).toEqual([expect.objectContaining({ workflow_id: workflowId, status: 'duplicate' })]);
    await waitFor('the replay succeeded', async () =>
      (await api('GET', `/v1/runs/${runIdFor(workflowId)}`)).json.status === 'succeeded' ? true : undefined,
    );
    const stored = await api('GET', '/v1/events/evt_force_1');
    expect(stored.json.replays).toEqual([
      expect.objectContaining({
        workflow_id: workflowId,
        replay_of: original,
        attempt: 1,
        status: 'succeeded',
        requested_by: expect.stringMatching(/^api_key:/),
      }),
    ]);
    expect((await runsOf(activityId)).map((run) => run.workflow_id).sort()).toEqual(
      [eventRunWorkflowId(activityId, 'evt_force_1'), workflowId].sort(),
    );
  });

  test('concurrent replays of one event start its run once, and concurrent forced replays under one key are one replay', async () => {
    await api('POST', '/v1/events', event('evt_race_1', 'replay.race'));
    const created = await api('POST', '/v1/activities', {
      name: 'replay-race',
      triggers: [{ type: 'event', event_type: 'replay.race' }],
      tasks: [{ type: 'noop' }],
    });
    const activityId = created.json.id as string;
    const workflowId = eventRunWorkflowId(activityId, 'evt_race_1');
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => api('POST', '/v1/events/evt_race_1/replay', { mode: 'if_no_runs' })),
    );
    const statuses = answers.map((answer) => answer.json.runs[0].status as string);
    expect(answers.every((answer) => answer.status === 200 && answer.json.runs[0].workflow_id === workflowId)).toBe(
      true,
    );
    expect(statuses.filter((status) => status === 'started')).toHaveLength(1);
    const forced = await Promise.all(
      Array.from({ length: 5 }, () =>
        api('POST', '/v1/events/evt_race_1/replay', { mode: 'force' }, { 'idempotency-key': 'race-force' }),
      ),
    );
    expect(new Set(forced.map((answer) => answer.json.runs[0].workflow_id))).toEqual(
      new Set([replayWorkflowId(runIdFor(workflowId), 1)]),
    );
    expect(forced.filter((answer) => answer.json.runs[0].status === 'started')).toHaveLength(1);
    await waitFor('both runs succeeded', async () => {
      const runs = await runsOf(activityId);
      return runs.length === 2 && runs.every((run) => run.status === 'succeeded') ? runs : undefined;
    });
    const metrics = await stack.api.server.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    expect(metrics.body).toMatch(/activity_core_event_replays_total\{mode="if_no_runs",status="started"\} [1-9]/);
    expect(metrics.body).toMatch(/activity_core_event_replays_total\{mode="force",status="duplicate"\} [1-9]/);
    let executions = 0;
    for await (const _ of stack.client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) executions++;
    expect(executions).toBe(1);
  });

  test('bad requests: an unknown event is 404, an ingest key is 403, a range over 31 days is 400 naming filter.to', async () => {
    expect((await api('POST', '/v1/events/evt_never_sent/replay', {})).status).toBe(404);
    expect((await api('POST', '/v1/events/evt_late_1/replay', {}, {}, INGEST)).status).toBe(403);
    expect(
      (await api('POST', '/v1/events/replay', { filter: { from: since, to: since }, dry_run: true }, {}, INGEST))
        .status,
    ).toBe(403);
    const wide = await api('POST', '/v1/events/replay', {
      filter: { from: '2026-01-01T00:00:00Z', to: '2026-03-01T00:00:00Z' },
    });
    expect(wide.status).toBe(400);
    expect(JSON.stringify(wide.json)).toContain('filter.to');
    expect((await api('GET', `/v1/events/replay/${randomUUID()}`)).status).toBe(404);
  });
});
