import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startStack, waitFor, type TestStack } from './harness';

const ADMIN = 'audit-admin-key-0123456789abcdefghijkl';
const READ = 'audit-read-key-0123456789abcdefghijklm';
const idOf = (key: string) => createHash('sha256').update(key).digest('hex').slice(0, 12);

let stack: TestStack;

beforeAll(async () => {
  stack = await startStack({
    env: {
      API_KEYS: `${ADMIN},${READ}`,
      API_KEY_ROLES: JSON.stringify({ [idOf(READ)]: { role: 'read' } }),
      RATE_LIMIT_MAX: '0',
    },
  });
});
afterAll(async () => {
  await stack?.close();
});

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';
const call = (key: string, method: Method, url: string, payload?: unknown, headers: Record<string, string> = {}) =>
  stack.api.server.inject({
    method,
    url,
    headers: { authorization: `Bearer ${key}`, ...headers },
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

interface Entry {
  id: string;
  at: string;
  actor: string;
  action: string;
  target_type: string;
  target_id: string | null;
  activity_id: string | null;
  outcome: string;
  status: number;
  request_id: string;
}

const audit = async (query = ''): Promise<{ items: Entry[]; next_cursor: string | null }> => {
  const response = await call(READ, 'GET', `/v1/audit${query}`);
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
};

/** Every entry the filter selects, page by page. */
async function allEntries(query: string, limit = 3): Promise<Entry[]> {
  const entries: Entry[] = [];
  let cursor: string | null = null;
  do {
    const page = await audit(
      `?limit=${limit}${query}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
    );
    expect(page.items.length).toBeLessThanOrEqual(limit);
    entries.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor !== null);
  return entries;
}

describe('the audit log', () => {
  const admin = `api_key:${idOf(ADMIN)}`;
  let activity: string;
  let runId: string;
  const started = new Date();

  beforeAll(async () => {
    const created = await call(
      ADMIN,
      'POST',
      '/v1/activities',
      {
        name: 'audited',
        triggers: [{ type: 'cron', cron: '0 0 1 1 *' }],
        tasks: [{ type: 'noop' }],
      },
      { 'x-request-id': 'audit-create-request' },
    );
    expect(created.statusCode, created.body).toBe(201);
    activity = created.json().id;
    const definition = { name: 'audited', triggers: [{ type: 'cron', cron: '0 0 2 1 *' }], tasks: [{ type: 'noop' }] };
    expect((await call(ADMIN, 'PUT', `/v1/activities/${activity}`, definition)).statusCode).toBe(200);
    expect((await call(ADMIN, 'POST', `/v1/activities/${activity}/disable`)).statusCode).toBe(200);
    expect((await call(ADMIN, 'POST', `/v1/activities/${activity}/enable`)).statusCode).toBe(200);
    expect(
      (await call(ADMIN, 'POST', `/v1/activities/${activity}/schedules/pause`, { note: 'audit' })).statusCode,
    ).toBe(200);
    expect((await call(ADMIN, 'POST', `/v1/activities/${activity}/schedules/resume`)).statusCode).toBe(200);
    const triggered = await call(ADMIN, 'POST', `/v1/activities/${activity}/schedules/trigger`, undefined, {
      'idempotency-key': 'audit-trigger',
    });
    expect(triggered.statusCode, triggered.body).toBe(202);
    runId = triggered.json().run_id;
    const backfill = await call(ADMIN, 'POST', `/v1/activities/${activity}/schedules/backfill`, {
      start: '2026-01-01T00:00:00Z',
      end: '2026-01-01T00:00:00Z',
    });
    expect(backfill.statusCode, backfill.body).toBe(200);
    expect((await call(ADMIN, 'POST', '/v1/schedules/reconcile')).statusCode).toBe(200);
    await waitFor('the triggered run to finish', async () => {
      const run = await call(READ, 'GET', `/v1/runs/${runId}`);
      return run.statusCode === 200 && run.json().status === 'succeeded' ? true : undefined;
    });
    expect((await call(ADMIN, 'POST', `/v1/runs/${runId}/cancel`)).statusCode).toBe(202);
    expect((await call(ADMIN, 'POST', `/v1/runs/${runId}/rerun`)).statusCode).toBe(202);
    const window = {
      activity_id: activity,
      status: 'succeeded',
      from: started.toISOString(),
      to: new Date().toISOString(),
    };
    expect((await call(ADMIN, 'POST', '/v1/runs/rerun', { filter: window, dry_run: true })).statusCode).toBe(200);
    expect((await call(ADMIN, 'POST', '/v1/runs/rerun', { filter: window })).statusCode).toBe(202);
    const source = {
      scheme: 'github',
      secret: 'audit-webhook-secret-0123456789abcdef',
      event_type_from_unsigned_header: true,
      allow_replay_without_timestamp: true,
    };
    expect((await call(ADMIN, 'POST', '/v1/webhook-sources', { name: 'audit-hook', ...source })).statusCode).toBe(201);
    expect((await call(ADMIN, 'PUT', '/v1/webhook-sources/audit-hook', source)).statusCode).toBe(200);
    expect((await call(ADMIN, 'DELETE', '/v1/webhook-sources/audit-hook')).statusCode).toBe(204);
    // A refused attempt: the read key may not delete.
    expect((await call(READ, 'DELETE', `/v1/activities/${activity}`)).statusCode).toBe(403);
    expect((await call(ADMIN, 'DELETE', `/v1/activities/${activity}`)).statusCode).toBe(204);
  });

  test('records each change and operator action with who, what, the outcome and the request id, newest first', async () => {
    const entries = (await allEntries('')).reverse();
    expect(
      entries.map((entry) => [entry.actor === admin ? 'admin' : entry.actor, entry.action, entry.outcome]),
    ).toEqual([
      ['admin', 'activity.create', 'succeeded'],
      ['admin', 'activity.update', 'succeeded'],
      ['admin', 'activity.disable', 'succeeded'],
      ['admin', 'activity.enable', 'succeeded'],
      ['admin', 'schedules.pause', 'succeeded'],
      ['admin', 'schedules.resume', 'succeeded'],
      ['admin', 'schedules.trigger', 'succeeded'],
      ['admin', 'schedules.backfill', 'succeeded'],
      ['admin', 'schedules.reconcile', 'succeeded'],
      ['admin', 'run.cancel', 'succeeded'],
      ['admin', 'run.rerun', 'succeeded'],
      // The dry run changed nothing and is not recorded.
      ['admin', 'runs.bulk_rerun', 'succeeded'],
      ['admin', 'webhook_source.create', 'succeeded'],
      ['admin', 'webhook_source.update', 'succeeded'],
      ['admin', 'webhook_source.delete', 'succeeded'],
      [`api_key:${idOf(READ)}`, 'activity.delete', 'refused'],
      ['admin', 'activity.delete', 'succeeded'],
    ]);
    const [create] = entries;
    expect(create).toMatchObject({
      target_type: 'activity',
      target_id: activity,
      activity_id: activity,
      status: 201,
      request_id: 'audit-create-request',
    });
    expect(entries.find((entry) => entry.action === 'run.cancel')).toMatchObject({
      target_type: 'run',
      target_id: runId,
      activity_id: activity,
      status: 202,
    });
    expect(entries.find((entry) => entry.action === 'runs.bulk_rerun')).toMatchObject({
      target_type: 'bulk_rerun',
      activity_id: activity,
      target_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(entries.find((entry) => entry.action === 'webhook_source.update')).toMatchObject({
      target_type: 'webhook_source',
      target_id: 'audit-hook',
      activity_id: null,
    });
    expect(entries.find((entry) => entry.action === 'schedules.reconcile')).toMatchObject({
      target_type: 'installation',
      target_id: null,
    });
    expect(entries.find((entry) => entry.outcome === 'refused')).toMatchObject({ status: 403, activity_id: activity });
    // Never a secret or a payload: the stored row holds only these columns.
    const stored = await stack.sql.query('SELECT * FROM audit_log');
    expect(JSON.stringify(stored.rows)).not.toContain('audit-webhook-secret');
    expect(Object.keys(stored.rows[0] as object).sort()).toEqual(
      [
        'action',
        'activity_id',
        'actor',
        'at',
        'id',
        'outcome',
        'request_id',
        'status',
        'target_id',
        'target_type',
      ].sort(),
    );
  });

  test('filters by actor, action, activity, target and time range', async () => {
    const byRead = await allEntries(`&actor=api_key:${idOf(READ)}`);
    expect(byRead.map((entry) => entry.action)).toEqual(['activity.delete']);
    expect((await allEntries('&action=run.rerun')).map((entry) => entry.target_id)).toEqual([runId]);
    const aboutActivity = await allEntries(`&activity_id=${activity}`);
    expect(aboutActivity.length).toBe(13);
    expect(aboutActivity.every((entry) => entry.activity_id === activity)).toBe(true);
    expect((await allEntries('&target_type=webhook_source&target_id=audit-hook')).length).toBe(3);
    const all = await allEntries('', 50);
    const middle = all[8]!.at;
    const after = await allEntries(`&from=${encodeURIComponent(middle)}`);
    expect(after.every((entry) => entry.at >= middle)).toBe(true);
    const before = await allEntries(`&to=${encodeURIComponent(middle)}`);
    expect(before.every((entry) => entry.at <= middle)).toBe(true);
    expect(new Set([...after, ...before].map((entry) => entry.id)).size).toBe(all.length);
    expect((await allEntries('&from=2099-01-01T00:00:00Z')).length).toBe(0);
  });

  test('refuses an unbounded page, a cursor it did not issue and an actor that is not a credential label, naming the field', async () => {
    for (const [query, field] of [
      ['?limit=201', 'limit'],
      ['?cursor=not-a-cursor', 'cursor'],
      [`?cursor=${Buffer.from(JSON.stringify(['2026-01-01T00:00:00Z', "x' OR 1=1"])).toString('base64url')}`, 'cursor'],
      ['?actor=someone', 'actor'],
      ['?action=activity.rename', 'action'],
      ['?from=yesterday', 'from'],
    ] as const) {
      const response = await call(READ, 'GET', `/v1/audit${query}`);
      expect(response.statusCode, query).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
      expect(JSON.stringify(response.json().errors), query).toContain(field);
    }
  });

  test('is append-only: Postgres refuses UPDATE, DELETE and TRUNCATE of the table', async () => {
    for (const statement of [
      "UPDATE audit_log SET actor = 'someone-else'",
      'DELETE FROM audit_log',
      'TRUNCATE audit_log',
    ]) {
      await expect(stack.sql.query(statement), statement).rejects.toThrow(/audit_log is append-only/);
    }
    expect((await stack.sql.query('SELECT count(*)::int AS n FROM audit_log')).rows[0].n).toBe(17);
  });
});
