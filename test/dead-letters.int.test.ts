import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId } from '@activity-core/contracts';
import { freePort } from '@activity-core/dev-services';
import { createApiApp } from '../apps/api/src/app';
import { runCli } from '../packages/client/src/cli/run';
import { startStack, testConfig, waitFor, type TestStack } from './harness';

const ADMIN = 'dead-letter-admin-key-0123456789abcdefg';
const INGEST = 'dead-letter-ingest-key-0123456789abcdef';

const event = (id: string, type: string, data: Record<string, unknown> = {}) => ({
  event_id: id,
  event_type: type,
  source: 'tests',
  occurred_at: '2026-03-01T09:00:00Z',
  data,
});

/**
 * An event of about 1 MB (EVENT_DATA_LIMIT_BYTES raised to its 1 MiB maximum)
 * for an activity whose definition carries another 1.2 MB (an http task's
 * body): the run's input, definition and event together, is over Temporal's
 * 2 MB payload limit, and Temporal refuses the start with INVALID_ARGUMENT
 * ("Blob data size exceeds limit") however often it is asked. Shrinking the
 * definition is the fix.
 */
const BIG_DATA = { blob: 'e'.repeat(1_000_000) };
const definition = (name: string, type: string, big: boolean) => ({
  name,
  triggers: [{ type: 'event', event_type: type }],
  tasks: big
    ? [
        {
          type: 'http',
          config: { url: 'http://127.0.0.1:9/never', method: 'POST', body: { pad: 'd'.repeat(1_200_000) } },
        },
      ]
    : [{ type: 'noop' }],
});

describe('dead letters: accepted events whose runs cannot be started', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startStack({
      env: {
        API_KEYS: ADMIN,
        INGEST_KEYS: INGEST,
        RATE_LIMIT_MAX: '0',
        EVENT_DATA_LIMIT_BYTES: String(1024 * 1024),
        BODY_LIMIT_BYTES: String(4 * 1024 * 1024),
      },
    });
  });
  afterAll(async () => {
    await stack?.close();
  });

  const api = async (method: 'GET' | 'POST' | 'PUT', url: string, payload?: unknown, key: string = ADMIN) => {
    const response = await stack.api.server.inject({
      method,
      url,
      headers: { authorization: `Bearer ${key}` },
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return { status: response.statusCode, json: response.json() };
  };

  const runsOf = async (activityId: string): Promise<{ workflow_id: string; status: string }[]> =>
    (await stack.sql.query('SELECT workflow_id, status FROM activity_runs WHERE activity_id = $1', [activityId])).rows;

  const executionsOf = async (workflowId: string): Promise<number> => {
    let executions = 0;
    for await (const _ of stack.client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) executions++;
    return executions;
  };

  const metricsText = async () =>
    (await stack.api.server.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${ADMIN}` } }))
      .body;

  test('a start Temporal refuses is a dead letter at once; retried after the definition is fixed it runs once under its own id, and retrying again starts nothing', async () => {
    const created = await api('POST', '/v1/activities', definition('dead-letter-blob', 'dl.blob', true));
    expect(created.status).toBe(201);
    const activityId = created.json.id as string;
    const workflowId = eventRunWorkflowId(activityId, 'evt_dl_blob');

    const sent = await api('POST', '/v1/events', event('evt_dl_blob', 'dl.blob', BIG_DATA));
    expect(sent.status).toBe(202);
    // The answer says so: the run will not start on its own (not `pending`).
    expect(sent.json.runs).toEqual([expect.objectContaining({ workflow_id: workflowId, status: 'dead_letter' })]);
    const redelivered = await api('POST', '/v1/events', event('evt_dl_blob', 'dl.blob', BIG_DATA));
    expect(redelivered.json).toMatchObject({ status: 'duplicate', runs: [{ status: 'dead_letter' }] });

    // Not left pending for the dispatcher to retry for ever: settled, with the reason in the decision log.
    const stored = await api('GET', '/v1/events/evt_dl_blob');
    expect(stored.json).toMatchObject({ routing_state: 'routed' });
    expect(stored.json.routes).toEqual([
      expect.objectContaining({
        activity_id: activityId,
        outcome: 'dead_letter',
        reason_code: 'start_refused',
        discarded_at: null,
        detail: expect.stringMatching(/^Temporal refused the start: .*Blob data size exceeds limit/),
      }),
    ]);
    const listed = await api('GET', `/v1/dead-letters?activity_id=${activityId}`);
    expect(listed).toMatchObject({
      status: 200,
      json: {
        items: [
          {
            event_id: 'evt_dl_blob',
            activity_id: activityId,
            activity_name: 'dead-letter-blob',
            event_type: 'dl.blob',
            workflow_id: workflowId,
            reason: 'start_refused',
            attempts: 1,
          },
        ],
        next_cursor: null,
      },
    });
    expect(await metricsText()).toContain(
      `activity_core_dead_letters{activity="${activityId}",reason="start_refused"} 1`,
    );

    // Retried before the fix: refused again, a dead letter again, counted.
    const early = await api('POST', '/v1/dead-letters/retry', { event_id: 'evt_dl_blob', activity_id: activityId });
    expect(early).toMatchObject({
      status: 200,
      json: { retried: [{ outcome: 'dead_letter', reason: 'start_refused' }], more: false },
    });
    expect((await api('GET', `/v1/dead-letters?activity_id=${activityId}`)).json.items[0].attempts).toBe(2);

    // The fix: a definition whose run input fits. The retry plans the event on version 2 and starts its own run.
    expect(
      (await api('PUT', `/v1/activities/${activityId}`, definition('dead-letter-blob', 'dl.blob', false))).status,
    ).toBe(200);
    const retried = await api('POST', '/v1/dead-letters/retry', { event_id: 'evt_dl_blob', activity_id: activityId });
    expect(retried).toMatchObject({
      status: 200,
      json: { retried: [{ workflow_id: workflowId, outcome: 'started', reason: null }], more: false },
    });
    await waitFor('the retried run succeeded', async () =>
      (await runsOf(activityId))[0]?.status === 'succeeded' ? true : undefined,
    );
    expect((await api('GET', `/v1/dead-letters?activity_id=${activityId}`)).json.items).toEqual([]);
    const after = await api('GET', '/v1/events/evt_dl_blob');
    expect(after.json.routes[0]).toMatchObject({ outcome: 'started', activity_version: 2, reason_code: null });
    expect(after.json.routes[0].detail).toMatch(/^retried by api_key:\S+ at .*; was dead_letter \(start_refused\): /);

    // Twice more, one of them a filter over every dead letter: the route is no dead letter now, nothing starts.
    const again = await api('POST', '/v1/dead-letters/retry', { event_id: 'evt_dl_blob', activity_id: activityId });
    expect(again.json.retried).toEqual([expect.objectContaining({ outcome: 'started' })]);
    expect((await api('POST', '/v1/dead-letters/retry', { filter: { activity_id: activityId } })).json).toEqual({
      retried: [],
      more: false,
    });
    expect(await runsOf(activityId)).toEqual([{ workflow_id: workflowId, status: 'succeeded' }]);
    expect(await executionsOf(workflowId)).toBe(1);
    expect(await metricsText()).not.toContain(`activity_core_dead_letters{activity="${activityId}"`);
  });

  test('a discarded dead letter is recorded on its route and in the audit log, no longer listed, counted or retried; a replay still reopens it', async () => {
    const created = await api('POST', '/v1/activities', definition('dead-letter-discard', 'dl.discard', true));
    const activityId = created.json.id as string;
    expect((await api('POST', '/v1/events', event('evt_dl_discard', 'dl.discard', BIG_DATA))).status).toBe(202);
    expect(
      (await api('GET', `/v1/dead-letters?reason=start_refused&activity_id=${activityId}`)).json.items,
    ).toHaveLength(1);

    const discarded = await api('POST', '/v1/dead-letters/discard', { filter: { activity_id: activityId } });
    expect(discarded).toMatchObject({
      status: 200,
      json: {
        discarded: [{ event_id: 'evt_dl_discard', activity_id: activityId, reason: 'start_refused' }],
        more: false,
      },
    });
    expect((await api('GET', `/v1/dead-letters?activity_id=${activityId}`)).json.items).toEqual([]);
    const stored = await api('GET', '/v1/events/evt_dl_discard');
    expect(stored.json.routes[0]).toMatchObject({ outcome: 'dead_letter', reason_code: 'start_refused' });
    expect(stored.json.routes[0].discarded_at).toEqual(expect.any(String));
    const audit = await api('GET', '/v1/audit?action=dead_letters.discard');
    expect(audit.json.items).toEqual([
      expect.objectContaining({ action: 'dead_letters.discard', outcome: 'succeeded' }),
    ]);
    expect(await metricsText()).not.toContain(`activity_core_dead_letters{activity="${activityId}"`);

    // Fixed afterwards, a retry of the discarded one starts nothing: discarding is final.
    await api('PUT', `/v1/activities/${activityId}`, definition('dead-letter-discard', 'dl.discard', false));
    const retried = await api('POST', '/v1/dead-letters/retry', {
      event_id: 'evt_dl_discard',
      activity_id: activityId,
    });
    expect(retried.json.retried).toEqual([expect.objectContaining({ outcome: 'dead_letter' })]);
    expect(await runsOf(activityId)).toEqual([]);

    // A replay is the operator's explicit way back even then: it reopens the route and the event runs once.
    const replayed = await api('POST', '/v1/events/evt_dl_discard/replay', { mode: 'if_no_runs' });
    expect(replayed.json.runs).toEqual([
      expect.objectContaining({ workflow_id: eventRunWorkflowId(activityId, 'evt_dl_discard'), status: 'started' }),
    ]);
    const stored2 = await api('GET', '/v1/events/evt_dl_discard');
    expect(stored2.json.routes[0]).toMatchObject({ outcome: 'started', reason_code: null });
    expect(stored2.json.routes[0].detail).toMatch(/^replayed \(if_no_runs\) .*; was dead_letter: /);
    await waitFor('the replayed run succeeded', async () =>
      (await runsOf(activityId))[0]?.status === 'succeeded' ? true : undefined,
    );
    expect(await runsOf(activityId)).toHaveLength(1);
  });

  test('a filter that fails on an event is listed as filter_error; retried after the filter is fixed, the event runs once', async () => {
    const filtered = (filter: string) => ({
      name: 'dead-letter-filter',
      triggers: [{ type: 'event', event_type: 'dl.filter', filter }],
      tasks: [{ type: 'noop' }],
    });
    const created = await api('POST', '/v1/activities', filtered('data.order.amount > 10'));
    const activityId = created.json.id as string;
    const sent = await api('POST', '/v1/events', event('evt_dl_filter', 'dl.filter', { amount: 50 }));
    expect(sent.json.filtered).toEqual([expect.objectContaining({ status: 'filter_error' })]);
    const listed = await api('GET', `/v1/dead-letters?reason=filter_error&activity_id=${activityId}`);
    expect(listed.json.items).toEqual([
      expect.objectContaining({ event_id: 'evt_dl_filter', reason: 'filter_error', attempts: 0 }),
    ]);

    await api('PUT', `/v1/activities/${activityId}`, filtered('data.amount > 10'));
    const retried = await api('POST', '/v1/dead-letters/retry', {
      filter: { reason: 'filter_error', activity_id: activityId },
    });
    expect(retried.json).toEqual({
      retried: [expect.objectContaining({ event_id: 'evt_dl_filter', outcome: 'started' })],
      more: false,
    });
    await waitFor('the run succeeded', async () =>
      (await runsOf(activityId))[0]?.status === 'succeeded' ? true : undefined,
    );
    expect(await runsOf(activityId)).toHaveLength(1);
  });

  test('an activity deleted while its event waited for Temporal gets no run: the dispatcher settles the route a dead letter (definition_deleted)', async () => {
    const created = await api('POST', '/v1/activities', definition('dead-letter-deleted', 'dl.deleted', false));
    const activityId = created.json.id as string;
    // Accepted by an API of the same deployment that cannot reach Temporal: the route stays pending for the dispatcher.
    const cut = await createApiApp(
      testConfig(stack.config.databaseUrl, {
        API_KEYS: ADMIN,
        RATE_LIMIT_MAX: '0',
        TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}`,
      }),
      { logger: false, dispatcher: false, bulkReruns: false, retention: false },
    );
    try {
      const sent = await cut.server.inject({
        method: 'POST',
        url: '/v1/events',
        headers: { authorization: `Bearer ${ADMIN}` },
        payload: event('evt_dl_deleted', 'dl.deleted'),
      });
      // Keep this stack's dispatcher off the event until the activity is deleted (it retries pending events every 200 ms;
      // the cut API asks for the next attempt at least 200 ms later).
      await stack.sql.query(`UPDATE events SET next_attempt_at = now() + interval '1 hour' WHERE event_id = $1`, [
        'evt_dl_deleted',
      ]);
      expect(sent.statusCode, sent.body).toBe(202);
      expect(sent.json().runs).toEqual([expect.objectContaining({ status: 'pending' })]);
    } finally {
      await cut.close();
    }
    expect((await api('GET', '/v1/events/evt_dl_deleted')).json.routes[0].outcome).toBe('pending');
    const deleted = await stack.api.server.inject({
      method: 'DELETE',
      url: `/v1/activities/${activityId}`,
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    expect(deleted.statusCode).toBe(204);
    await stack.sql.query('UPDATE events SET next_attempt_at = now() WHERE event_id = $1', ['evt_dl_deleted']);

    const route = await waitFor('the dispatcher to settle the route', async () => {
      const stored = await api('GET', '/v1/events/evt_dl_deleted');
      return stored.json.routing_state === 'routed' ? stored.json.routes[0] : undefined;
    });
    expect(route).toMatchObject({ outcome: 'dead_letter', reason_code: 'definition_deleted' });
    expect(await executionsOf(eventRunWorkflowId(activityId, 'evt_dl_deleted'))).toBe(0);
    expect((await api('GET', '/v1/dead-letters?reason=definition_deleted')).json.items).toEqual([
      expect.objectContaining({ event_id: 'evt_dl_deleted', activity_id: activityId, attempts: 1 }),
    ]);
    // Retried, the activity is still deleted: a dead letter again, counted, and still no run.
    const retried = await api('POST', '/v1/dead-letters/retry', {
      event_id: 'evt_dl_deleted',
      activity_id: activityId,
    });
    expect(retried.json.retried).toEqual([
      expect.objectContaining({ outcome: 'dead_letter', reason: 'definition_deleted' }),
    ]);
    expect((await api('GET', '/v1/dead-letters?reason=definition_deleted')).json.items[0].attempts).toBe(2);
    expect(await runsOf(activityId)).toEqual([]);
  });

  test('the command line lists, retries and discards dead letters through the typed client', async () => {
    const created = await api('POST', '/v1/activities', definition('dead-letter-cli', 'dl.cli', true));
    const activityId = created.json.id as string;
    for (const id of ['evt_dl_cli_1', 'evt_dl_cli_2'])
      expect((await api('POST', '/v1/events', event(id, 'dl.cli', BIG_DATA))).status).toBe(202);
    // The client's fetch, answered by the API in this process.
    const fetch: typeof globalThis.fetch = async (input, init) => {
      const url = new URL(String(input));
      const response = await stack.api.server.inject({
        method: (init?.method ?? 'GET') as 'GET' | 'POST',
        url: `${url.pathname}${url.search}`,
        headers: init?.headers as Record<string, string>,
        ...(init?.body === undefined ? {} : { payload: init.body as string }),
      });
      return new Response(response.body, {
        status: response.statusCode,
        headers: { 'content-type': String(response.headers['content-type'] ?? 'application/json') },
      });
    };
    const cli = async (...args: string[]) => {
      let stdout = '';
      let stderr = '';
      const code = await runCli(args, {
        stdout: { write: (chunk: string) => void (stdout += chunk) },
        stderr: { write: (chunk: string) => void (stderr += chunk) },
        env: { ACTIVITY_CORE_URL: 'http://api.test', ACTIVITY_CORE_API_KEY: ADMIN, NO_COLOR: '1' },
        cwd: '/',
        client: { fetch, retry: { maxAttempts: 1 } },
      });
      return { code, stdout, stderr };
    };

    const listed = await cli('dead-letters', 'list', '--activity', 'dead-letter-cli', '-o', 'json');
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as { event_id: string; reason: string }[]).map((item) => item.event_id)).toEqual([
      'evt_dl_cli_1',
      'evt_dl_cli_2',
    ]);
    expect((await cli('dead-letters', 'list', '--reason', 'start_refused')).stdout).toContain('evt_dl_cli_1');
    // Paged, oldest first: one per page here.
    const page1 = await api('GET', `/v1/dead-letters?activity_id=${activityId}&limit=1`);
    expect(page1.json.items.map((item: { event_id: string }) => item.event_id)).toEqual(['evt_dl_cli_1']);
    expect(page1.json.next_cursor).toEqual(expect.any(String));
    const page2 = await api(
      'GET',
      `/v1/dead-letters?activity_id=${activityId}&limit=1&cursor=${encodeURIComponent(page1.json.next_cursor as string)}`,
    );
    expect(page2.json).toEqual({ items: [expect.objectContaining({ event_id: 'evt_dl_cli_2' })], next_cursor: null });

    // Still refused: a retry that fails again exits 1 and names the reason.
    const refused = await cli('dead-letters', 'retry', 'evt_dl_cli_1', '--activity', activityId);
    expect(refused).toMatchObject({ code: 1, stdout: expect.stringContaining('dead_letter (start_refused)') });

    await api('PUT', `/v1/activities/${activityId}`, definition('dead-letter-cli', 'dl.cli', false));
    const retried = await cli('dead-letters', 'retry', 'evt_dl_cli_1', '--activity', 'dead-letter-cli');
    expect(retried).toMatchObject({ code: 0, stdout: expect.stringContaining('started') });
    const discarded = await cli('dead-letters', 'discard', '--all', '--activity', 'dead-letter-cli');
    expect(discarded).toMatchObject({ code: 0, stdout: '1 dead letter discarded\n' });
    // "Why didn't this run?" names the dead letter and its reason.
    const explained = await cli('explain', 'event', 'evt_dl_cli_2');
    expect(explained.stdout).toContain(
      'did not run — a dead letter (start_refused, discarded): Temporal refused the start',
    );
    expect(JSON.parse((await cli('dead-letters', 'list', '--activity', activityId, '-o', 'json')).stdout)).toEqual([]);
    await waitFor('the retried run succeeded', async () =>
      (await runsOf(activityId))[0]?.status === 'succeeded' ? true : undefined,
    );
    expect(await runsOf(activityId)).toEqual([
      { workflow_id: eventRunWorkflowId(activityId, 'evt_dl_cli_1'), status: 'succeeded' },
    ]);
  });

  test('bad requests: no selection or half of one is 400 naming the field, an unknown event is 404, an ingest key is 403, a foreign cursor is 400', async () => {
    const none = await api('POST', '/v1/dead-letters/retry', {});
    expect(none.status).toBe(400);
    expect(JSON.stringify(none.json)).toContain('filter');
    const half = await api('POST', '/v1/dead-letters/discard', { event_id: 'evt_dl_blob' });
    expect(half.status).toBe(400);
    expect(JSON.stringify(half.json)).toContain('activity_id');
    expect(
      (
        await api('POST', '/v1/dead-letters/retry', {
          event_id: 'evt_never_sent',
          activity_id: '00000000-0000-4000-8000-000000000000',
        })
      ).status,
    ).toBe(404);
    expect((await api('POST', '/v1/dead-letters/retry', { filter: {} }, INGEST)).status).toBe(403);
    expect((await api('GET', '/v1/dead-letters?cursor=bm90LWEtY3Vyc29y')).status).toBe(400);
    expect((await api('GET', '/v1/dead-letters?limit=201')).status).toBe(400);
  });
});
