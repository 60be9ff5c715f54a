import { randomBytes, randomUUID } from 'node:crypto';
import { signGithub, signHmac, signStandardWebhook } from '@activity-core/webhooks';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApiApp } from '../src/app';
import { AUTH, startStack, TEST_KEY, testConfig, type TestStack } from '../../../test/harness';
import { eventRunWorkflowId } from '@activity-core/contracts/ids';

let stack: TestStack;

beforeAll(async () => {
  // Keys are on: webhook routes must still need no key, only a signature.
  stack = await startStack({
    worker: false,
    env: { API_KEYS: TEST_KEY, WEBHOOK_SECRET_KEYS: randomBytes(32).toString('base64'), AUTH_FAILURE_LIMIT: '1000' },
  });
});
afterAll(async () => {
  await stack?.close();
});

type Headers = Record<string, string>;
type Response = Awaited<ReturnType<TestStack['api']['server']['inject']>>;

const manage = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) =>
  stack.api.server.inject({ method, url, headers: AUTH, ...(payload === undefined ? {} : { payload }) });

const deliver = (source: string, body: string, headers: Headers): Promise<Response> =>
  stack.api.server.inject({
    method: 'POST',
    url: `/v1/webhooks/${source}`,
    payload: body,
    headers: { 'content-type': 'application/json', ...headers },
  });

async function eventCount(): Promise<number> {
  return (await stack.sql.query('SELECT count(*)::int AS n FROM events')).rows[0].n;
}

/** Every refusal is the same answer, whatever the reason (which goes to the log): it must not reveal how a source is configured. */
function expectRefused(response: Response): void {
  expect(response.statusCode, response.body).toBe(401);
  expect(response.headers['content-type']).toContain('application/problem+json');
  const body = response.json();
  expect(body.type).toBe('urn:activity-core:problem:invalid-signature');
  expect(body.errors).toEqual([
    { path: 'headers', code: 'invalid_signature', message: expect.stringContaining('could not be verified') },
  ]);
}

const standardSecret = `whsec_${randomBytes(24).toString('base64')}`;
const hmacSource = {
  name: 'billing',
  scheme: 'hmac_sha256',
  secret: 'billing-secret-0123456789abcdef',
  signature_header: 'X-Billing-Signature',
  signature_prefix: 'sha256=',
  timestamp_header: 'X-Billing-Timestamp',
} as const;

/**
 * One entry per scheme: how a sender signs a delivery, and which headers a
 * delivery must carry. Every scheme faces the same refusals below.
 */
const schemes = [
  {
    scheme: 'standard_webhooks',
    source: { name: 'shop', scheme: 'standard_webhooks', secret: standardSecret },
    body: (id: string) =>
      JSON.stringify({ type: 'shop.order.paid', timestamp: '2026-03-01T09:00:00Z', data: { order: id } }),
    sign: (body: string, options: { id: string; secret?: string; at?: Date }) =>
      signStandardWebhook(options.secret ?? standardSecret, body, {
        id: options.id,
        ...(options.at === undefined ? {} : { at: options.at }),
      }),
    otherSecret: `whsec_${randomBytes(24).toString('base64')}`,
    required: ['webhook-id', 'webhook-timestamp', 'webhook-signature'],
    idOrigin: 'delivery_id',
    signsTime: true,
  },
  {
    scheme: 'github',
    source: {
      name: 'github',
      scheme: 'github',
      secret: 'github-secret-0123456789abcdef',
      event_type_from_unsigned_header: true,
      allow_replay_without_timestamp: true,
    },
    body: (id: string) => JSON.stringify({ action: 'opened', pull_request: { number: 1, title: id } }),
    sign: (body: string, options: { id: string; secret?: string }) => ({
      'X-GitHub-Event': 'pull_request',
      'X-GitHub-Delivery': options.id,
      ...signGithub(options.secret ?? 'github-secret-0123456789abcdef', body),
    }),
    otherSecret: 'another-github-secret-0123456789',
    // X-GitHub-Event is read, not signed: without it the delivery is authentic but has no type (400, below).
    required: ['X-Hub-Signature-256'],
    idOrigin: 'delivery_id',
    signsTime: false,
  },
  {
    scheme: 'hmac_sha256',
    source: hmacSource,
    body: (id: string) => JSON.stringify({ id, type: 'invoice.paid', amount: 100 }),
    sign: (body: string, options: { id: string; secret?: string; at?: Date }) =>
      signHmac({ ...hmacSource, secret: options.secret ?? hmacSource.secret }, body, options.at),
    otherSecret: 'not-the-billing-secret-0123456789',
    required: ['X-Billing-Signature', 'X-Billing-Timestamp'],
    idOrigin: 'body',
    signsTime: true,
  },
] as const;

describe('webhook sources over the management API', () => {
  test('sources are created for every scheme and never show their secret', async () => {
    for (const { source } of schemes) {
      const created = await manage('POST', '/v1/webhook-sources', source);
      expect(created.statusCode, created.body).toBe(201);
      expect(created.body).not.toContain(source.secret);
      expect(created.json()).toMatchObject({
        name: source.name,
        scheme: source.scheme,
        secret_hint: source.secret.slice(-4),
        secret_encrypted: true,
      });
    }
    const listed = await manage('GET', '/v1/webhook-sources');
    expect(listed.json().items.map((s: { name: string }) => s.name)).toEqual(['billing', 'github', 'shop']);
    for (const { source } of schemes) expect(listed.body).not.toContain(source.secret);
    expect((await manage('GET', '/v1/webhook-sources/github')).json()).toMatchObject({
      event_id: [{ header: 'X-GitHub-Delivery' }],
      event_type: { from: { header: 'X-GitHub-Event' }, suffix: { body: 'action' } },
    });
  });

  test('secrets are encrypted at rest and bound to their source', async () => {
    const rows = await stack.sql.query(`SELECT name, config::text AS config FROM webhook_sources`);
    for (const row of rows.rows) {
      const { source } = schemes.find((s) => s.source.name === row.name)!;
      expect(row.config).not.toContain(source.secret);
      expect(JSON.parse(row.config).secret).toEqual({
        v: 1,
        kid: expect.any(String),
        iv: expect.any(String),
        tag: expect.any(String),
        ct: expect.any(String),
      });
    }
  });

  test('a source whose encryption key is no longer configured is still shown, and its deliveries fail without storing anything', async () => {
    const keyless = await createApiApp(testConfig(stack.config.databaseUrl, { API_KEYS: TEST_KEY }), {
      logger: false,
      dispatcher: false,
      retention: false,
    });
    try {
      const shown = await keyless.server.inject({ method: 'GET', url: '/v1/webhook-sources/billing', headers: AUTH });
      expect(shown.statusCode).toBe(200);
      expect(shown.json()).toMatchObject({ secret_encrypted: true, secret_hint: hmacSource.secret.slice(-4) });
      const before = await eventCount();
      const body = JSON.stringify({ id: `keyless-${randomUUID()}`, type: 'invoice.paid' });
      const refused = await keyless.server.inject({
        method: 'POST',
        url: '/v1/webhooks/billing',
        payload: body,
        headers: { 'content-type': 'application/json', ...signHmac(hmacSource, body) },
      });
      // Answered like a bad signature: a 500 would tell a prober the source exists.
      expect(refused.statusCode).toBe(401);
      expect(refused.json().type).toBe('urn:activity-core:problem:invalid-signature');
      expect(refused.body).not.toContain(hmacSource.secret);
      expect(await eventCount()).toBe(before);
    } finally {
      await keyless.close();
    }
  });

  test('a taken name is a 409 and an invalid config is a 400 naming the field', async () => {
    expect((await manage('POST', '/v1/webhook-sources', schemes[0].source)).statusCode).toBe(409);
    const invalid = await manage('POST', '/v1/webhook-sources', {
      name: 'bad',
      scheme: 'standard_webhooks',
      secret: 'plain-text',
    });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json().errors[0].path).toBe('secret');
    const unknown = await manage('POST', '/v1/webhook-sources', { name: 'bad', scheme: 'carrier-pigeon', secret: 'x' });
    expect(unknown.statusCode).toBe(400);
  });
});

describe.each(schemes)('$scheme deliveries', (scheme) => {
  const { name } = scheme.source;

  test('a correctly signed delivery is accepted with the provider id, namespaced by source, as the event id', async () => {
    const id = `${scheme.scheme}-ok-${randomUUID()}`;
    const body = scheme.body(id);
    const response = await deliver(name, body, scheme.sign(body, { id }));
    expect(response.statusCode, response.body).toBe(202);
    expect(response.json()).toMatchObject({
      event_id: `wh:${name}:${id}`,
      event_id_assigned: false,
      status: 'accepted',
    });
    const stored = await stack.api.server.inject({
      method: 'GET',
      url: `/v1/events/${encodeURIComponent(`wh:${name}:${id}`)}`,
      headers: AUTH,
    });
    expect(stored.json()).toMatchObject({
      id_origin: scheme.idOrigin,
      envelope: { source: `webhook:${name}`, data: JSON.parse(body) },
    });
  });

  test('the same delivery sent again is a duplicate', async () => {
    const id = `${scheme.scheme}-again-${randomUUID()}`;
    const body = scheme.body(id);
    expect((await deliver(name, body, scheme.sign(body, { id }))).json().status).toBe('accepted');
    const again = await deliver(name, body, scheme.sign(body, { id }));
    expect(again.statusCode).toBe(202);
    expect(again.json().status).toBe('duplicate');
  });

  test('a tampered body is refused with 401 and nothing is stored', async () => {
    const id = `${scheme.scheme}-tampered-${randomUUID()}`;
    const body = scheme.body(id);
    const before = await eventCount();
    expectRefused(await deliver(name, body.replace('1', '2'), scheme.sign(body, { id })));
    expect(await eventCount()).toBe(before);
  });

  test('a signature made with another secret is refused with 401 and nothing is stored', async () => {
    const id = `${scheme.scheme}-wrong-${randomUUID()}`;
    const body = scheme.body(id);
    const before = await eventCount();
    expectRefused(await deliver(name, body, scheme.sign(body, { id, secret: scheme.otherSecret })));
    expect(await eventCount()).toBe(before);
  });

  test.each(scheme.required)(
    'a delivery without the %s header is refused with 401 and nothing is stored',
    async (header) => {
      const id = `${scheme.scheme}-missing-${randomUUID()}`;
      const body = scheme.body(id);
      const headers: Headers = { ...scheme.sign(body, { id }) };
      delete headers[header];
      const before = await eventCount();
      expectRefused(await deliver(name, body, headers));
      expect(await eventCount()).toBe(before);
    },
  );
});

describe.each(schemes.filter((scheme) => scheme.signsTime))('$scheme replays', (scheme) => {
  test('a delivery signed 10 minutes ago is refused as stale and nothing is stored', async () => {
    const id = `${scheme.scheme}-stale-${randomUUID()}`;
    const body = scheme.body(id);
    const before = await eventCount();
    expectRefused(
      await deliver(scheme.source.name, body, scheme.sign(body, { id, at: new Date(Date.now() - 10 * 60_000) })),
    );
    expect(await eventCount()).toBe(before);
  });
});

describe('reserved ids', () => {
  test('a delivery id shaped like a cron fire time or an emitted event id is namespaced, so it cannot collide with them', async () => {
    const hmac = schemes[2];
    for (const id of ['2026-03-01T09:00:00+00:00', 'emit-3262e7ec-9a1a-55ef-92d5-e39ccba8e475:0']) {
      const body = hmac.body(id);
      const response = await deliver(hmac.source.name, body, hmac.sign(body, { id }));
      expect(response.statusCode, response.body).toBe(202);
      expect(response.json().event_id).toBe(`wh:billing:${id}`);
    }
  });
});

describe('github replays', () => {
  test('a GitHub redelivery under its original delivery id starts nothing new', async () => {
    // Replays under a new delivery id are covered in webhook-replay.int.test.ts.
    const github = schemes[1];
    const id = `github-replay-${randomUUID()}`;
    const body = github.body(id);
    const headers = github.sign(body, { id });
    expect((await deliver('github', body, headers)).json().status).toBe('accepted');
    expect((await deliver('github', body, headers)).json()).toMatchObject({
      status: 'duplicate',
      event_id: `wh:github:${id}`,
    });
  });
});

describe('webhook deliveries', () => {
  test("a signature from the reference standardwebhooks library's Webhook.sign is accepted", async () => {
    const id = `msg_${randomUUID()}`;
    const at = new Date();
    const body = JSON.stringify({ type: 'shop.order.paid', timestamp: at.toISOString(), data: { order: 'ref' } });
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(standardSecret).sign(id, at, body),
    };
    const response = await deliver('shop', body, headers);
    expect(response.statusCode, response.body).toBe(202);
    expect(response.json().event_id).toBe(`wh:shop:${id}`);
  });

  test('a GitHub delivery routes as {event}.{action} and starts the matching activity; the sender is told only the event id and status', async () => {
    const activity = await manage('POST', '/v1/activities', {
      name: 'on-pull-request',
      triggers: [{ type: 'event', event_type: 'pull_request.*', source: 'webhook:github' }],
      tasks: [{ type: 'noop' }],
    });
    const id = randomUUID();
    const body = JSON.stringify({ action: 'opened', pull_request: { number: 7 } });
    const response = await deliver('github', body, {
      'X-GitHub-Event': 'pull_request',
      'X-GitHub-Delivery': id,
      ...signGithub('github-secret-0123456789abcdef', body),
    });
    // Webhook providers keep response bodies: which activities exist is not theirs to know.
    expect(response.json()).toEqual({ event_id: `wh:github:${id}`, event_id_assigned: false, status: 'accepted' });
    const log = (await manage('GET', `/v1/events/wh:github:${id}`)).json();
    expect(log.routes).toEqual([
      expect.objectContaining({
        workflow_id: eventRunWorkflowId(activity.json().id, `wh:github:${id}`),
        outcome: 'started',
      }),
    ]);
  });

  test('an authentic delivery whose body is not JSON is a 400 and nothing is stored', async () => {
    const before = await eventCount();
    const response = await deliver('billing', 'not json', signHmac(hmacSource, 'not json'));
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({
      type: 'urn:activity-core:problem:invalid-webhook-payload',
      errors: [{ code: 'invalid_json' }],
    });
    expect(await eventCount()).toBe(before);
  });

  test('a delivery that carries no id at all is assigned one', async () => {
    const body = JSON.stringify({ type: 'invoice.paid', amount: 1 });
    const response = await deliver('billing', body, signHmac(hmacSource, body));
    expect(response.statusCode).toBe(202);
    expect(response.json()).toMatchObject({ event_id: expect.stringMatching(/^evt_/), event_id_assigned: true });
  });

  test('a delivery to an unknown source is refused like a bad signature and nothing is stored', async () => {
    const before = await eventCount();
    const body = JSON.stringify({ id: 'x', type: 'a.b' });
    expectRefused(await deliver('nobody', body, signHmac(hmacSource, body)));
    expect(await eventCount()).toBe(before);
  });

  test('replacing a source rotates its secret: the old one stops verifying and the new one verifies', async () => {
    const rotated = { ...hmacSource, name: 'rotating', secret: 'first-secret-0123456789abcdef' };
    expect((await manage('PUT', '/v1/webhook-sources/rotating', rotated)).statusCode).toBe(201);
    const replaced = await manage('PUT', '/v1/webhook-sources/rotating', {
      ...rotated,
      secret: 'second-secret-0123456789abcdef',
    });
    expect(replaced.statusCode).toBe(200);
    expect(replaced.json().secret_hint).toBe('cdef');
    const body = JSON.stringify({ id: `rot-${randomUUID()}`, type: 'invoice.paid' });
    expectRefused(await deliver('rotating', body, signHmac(rotated, body)));
    expect(
      (await deliver('rotating', body, signHmac({ ...rotated, secret: 'second-secret-0123456789abcdef' }, body)))
        .statusCode,
    ).toBe(202);
    const mismatch = await manage('PUT', '/v1/webhook-sources/rotating', { ...rotated, name: 'other' });
    expect(mismatch.statusCode).toBe(400);
  });

  test('a deleted source refuses deliveries', async () => {
    const doomed = { ...hmacSource, name: 'doomed' };
    await manage('POST', '/v1/webhook-sources', doomed);
    expect((await manage('DELETE', '/v1/webhook-sources/doomed')).statusCode).toBe(204);
    expect((await manage('DELETE', '/v1/webhook-sources/doomed')).statusCode).toBe(404);
    const body = JSON.stringify({ id: 'after-delete', type: 'invoice.paid' });
    expectRefused(await deliver('doomed', body, signHmac(doomed, body)));
  });
});
