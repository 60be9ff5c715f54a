import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventRunWorkflowId, runIdFor } from '@activity-core/contracts';
import { signStandardWebhook } from '@activity-core/webhooks';
import { startStack, type TestStack } from '../../../test/harness';

/** No input may reach a limit deep in the engine: it is refused at the door, naming the field and the limit. */
let stack: TestStack;

beforeAll(async () => {
  // Seconds-level cron as the default deployment has it: off (the harness opts in for schedule tests).
  stack = await startStack({ env: { CRON_ALLOW_SECONDS: 'false', EVENT_DATA_LIMIT_BYTES: String(64 * 1024) } });
});
afterAll(async () => {
  await stack?.close();
});

type Response = { statusCode: number; headers: Record<string, unknown>; body: string; json(): any };

function expectProblem(response: Response, status: number, path: string, limit: string) {
  expect(response.statusCode, response.body).toBe(status);
  expect(response.headers['content-type']).toContain('application/problem+json');
  const body = response.json();
  expect(body.errors).toEqual(
    expect.arrayContaining([expect.objectContaining({ path, message: expect.stringContaining(limit) })]),
  );
  return body;
}

const nested = (depth: number): Record<string, unknown> => {
  let value: Record<string, unknown> = {};
  for (let i = 1; i < depth; i++) value = { k: value };
  return value;
};

/** The JSON text of `nested(depth)`, written out: JSON.stringify itself would overflow on the deepest ones. */
const nestedJson = (depth: number): string => `${'{"k":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;
const DEEP = '"__deep__"';

const event = (id: string, data: unknown) => ({
  event_id: id,
  event_type: 'limits.check',
  source: 'tests',
  occurred_at: '2026-03-01T09:00:00Z',
  data,
});
/** Posts `payload` as JSON; `deep` replaces the string "__deep__" with nesting that deep. */
const post = (payload: unknown, url = '/v1/events', deep?: number) =>
  stack.api.server.inject({
    method: 'POST',
    url,
    payload: deep === undefined ? JSON.stringify(payload) : JSON.stringify(payload).replace(DEEP, nestedJson(deep)),
    headers: { 'content-type': 'application/json' },
  });
const storedEvents = async (): Promise<number> =>
  (await stack.sql.query('SELECT count(*)::int AS n FROM events')).rows[0].n;

describe('event data limits', () => {
  test('data nested thousands of levels deep is a 400 naming data and the depth limit, not a 500', async () => {
    const before = await storedEvents();
    // About 30 KB of JSON: deep enough to overflow the stack of a recursive canonicaliser.
    expectProblem(await post(event('evt_deep', JSON.parse(DEEP)), '/v1/events', 5_000), 400, 'data', 'the limit is 32');
    expectProblem(await post(event('evt_deep33', nested(33))), 400, 'data', 'EVENT_DATA_MAX_DEPTH');
    expect(await storedEvents()).toBe(before);
    expect((await post(event('evt_deep32', nested(32)))).statusCode).toBe(202);
  });

  test('data over EVENT_DATA_LIMIT_BYTES is a 413 naming data and the limit, and nothing is stored', async () => {
    const before = await storedEvents();
    const body = expectProblem(
      await post(event('evt_large', { s: 'x'.repeat(70 * 1024) })),
      413,
      'data',
      'the limit is 65536 bytes',
    );
    expect(body.type).toBe('urn:activity-core:problem:payload-too-large');
    expect(await storedEvents()).toBe(before);
    expect((await post(event('evt_fits', { s: 'x'.repeat(60 * 1024) }))).statusCode).toBe(202);
  });

  test('in a batch, each item is checked on its own: the oversized one is a 413 item and the others are accepted', async () => {
    const response = await post([
      event('evt_batch_ok', { n: 1 }),
      event('evt_batch_big', { s: 'x'.repeat(70 * 1024) }),
      event('evt_batch_deep', nested(40)),
    ]);
    expect(response.statusCode, response.body).toBe(202);
    const items = response.json().results;
    expect(items[0]).toMatchObject({ ok: true });
    expect(items[1]).toMatchObject({
      ok: false,
      status: 413,
      errors: [expect.objectContaining({ path: 'data', message: expect.stringContaining('65536') })],
    });
    expect(items[2]).toMatchObject({
      ok: false,
      status: 400,
      errors: [expect.objectContaining({ path: 'data', message: expect.stringContaining('32') })],
    });
  });

  test('a webhook delivery whose event data is over the limit is a 413 naming data, and nothing is stored', async () => {
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    const created = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/webhook-sources',
      payload: { name: 'limits-hook', scheme: 'standard_webhooks', secret },
    });
    expect(created.statusCode, created.body).toBe(201);
    const deliver = (id: string, data: object) => {
      const body = JSON.stringify({ type: 'limits.hook', timestamp: '2026-03-01T09:00:00Z', data });
      return stack.api.server.inject({
        method: 'POST',
        url: '/v1/webhooks/limits-hook',
        payload: body,
        headers: { 'content-type': 'application/json', ...signStandardWebhook(secret, body, { id }) },
      });
    };
    const before = await storedEvents();
    expectProblem(await deliver('msg_big', { s: 'x'.repeat(70 * 1024) }), 413, 'data', 'the limit is 65536 bytes');
    expect(await storedEvents()).toBe(before);
    expect((await deliver('msg_small', { s: 'x' })).statusCode).toBe(202);
  });

  test('an emitted event over the limit fails its task with payload_too_large instead of reaching Temporal', async () => {
    const created = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      payload: {
        name: 'amplifier',
        triggers: [{ type: 'event', event_type: 'limits.amplify' }],
        // Each copy fits; together they pass the 64 KiB limit.
        tasks: [
          {
            type: 'emit_event',
            config: { event_type: 'limits.amplified', data: { a: '{{event.data.s}}', b: '{{event.data.s}}' } },
          },
        ],
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    const accepted = await post({
      ...event('evt_amplify', { s: 'x'.repeat(40 * 1024) }),
      event_type: 'limits.amplify',
    });
    expect(accepted.statusCode, accepted.body).toBe(202);
    const runId = runIdFor(eventRunWorkflowId(created.json().id, 'evt_amplify'));
    await expect
      .poll(
        async () =>
          (await stack.api.server.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json().tasks?.[0]?.status,
        { timeout: 60_000, interval: 250 },
      )
      .toBe('failed');
    const run = (await stack.api.server.inject({ method: 'GET', url: `/v1/runs/${runId}` })).json();
    expect(run.tasks[0].error).toMatchObject({ type: 'payload_too_large' });
  });
});

describe('definition limits', () => {
  const definition = (extra: object) => ({
    name: `limits-${Math.random().toString(36).slice(2, 10)}`,
    triggers: [],
    tasks: [{ type: 'noop' }],
    ...extra,
  });
  const register = (payload: unknown, deep?: number) => post(payload, '/v1/activities', deep);

  test('a seconds-level cron trigger is refused while CRON_ALLOW_SECONDS is off, naming the trigger cron field', async () => {
    const body = expectProblem(
      await register(definition({ triggers: [{ type: 'cron', cron: '*/5 * * * * *' }] })),
      400,
      'triggers[0].cron',
      'CRON_ALLOW_SECONDS',
    );
    expect(body.status).toBe(400);
    expect((await register(definition({ triggers: [{ type: 'cron', cron: '*/5 * * * *' }] }))).statusCode).toBe(201);
  });

  test('too many tasks, an http timeout past 15m, a delay past 365d and a deep http body are each a 400 naming the field and the limit', async () => {
    expectProblem(
      await register(definition({ tasks: Array.from({ length: 51 }, () => ({ type: 'noop' })) })),
      400,
      'tasks',
      'at most 50',
    );
    expectProblem(
      await register(definition({ tasks: [{ type: 'http', config: { url: 'https://x.test/', timeout: '25d' } }] })),
      400,
      'tasks[0].config.timeout',
      '15m',
    );
    expectProblem(
      await register(definition({ tasks: [{ type: 'delay', config: { duration: '400d' } }] })),
      400,
      'tasks[0].config.duration',
      '365d',
    );
    expectProblem(await register(definition({ run_timeout: '999999999d' })), 400, 'run_timeout', '365d');
    expectProblem(
      await register(
        definition({ tasks: [{ type: 'http', config: { url: 'https://x.test/', body: JSON.parse(DEEP) } }] }),
        5_000,
      ),
      400,
      'tasks[0].config.body',
      'the limit is 32',
    );
  });
});
