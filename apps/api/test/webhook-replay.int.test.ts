import { randomBytes, randomUUID } from 'node:crypto';
import { createSecretBox, signGithub, signHmac } from '@activity-core/webhooks';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApiApp } from '../src/app';
import { AUTH, startStack, TEST_KEY, testConfig, type TestStack } from '../../../test/harness';

/**
 * A captured webhook delivery must not be replayable with another meaning:
 * not under a new delivery id, not as another event type, and no key holder
 * may claim a delivery's event id before the sender uses it.
 */

let stack: TestStack;
const SECRET_KEY = randomBytes(32).toString('base64');

beforeAll(async () => {
  stack = await startStack({
    worker: false,
    env: { API_KEYS: TEST_KEY, WEBHOOK_SECRET_KEYS: SECRET_KEY, AUTH_FAILURE_LIMIT: '1000' },
  });
  const sources = [
    {
      name: 'github',
      scheme: 'github',
      secret: GITHUB_SECRET,
      event_type_from_unsigned_header: true,
      allow_replay_without_timestamp: true,
    },
    { name: 'plain', scheme: 'hmac_sha256', secret: PLAIN_SECRET, allow_replay_without_timestamp: true },
  ];
  for (const source of sources) expect((await manage('POST', '/v1/webhook-sources', source)).statusCode).toBe(201);
});
afterAll(async () => {
  await stack?.close();
});

const GITHUB_SECRET = 'github-secret-0123456789abcdef';
const PLAIN_SECRET = 'plain-hmac-secret-0123456789';

type Response = Awaited<ReturnType<TestStack['api']['server']['inject']>>;

const manage = (method: 'GET' | 'POST' | 'PUT', url: string, payload?: object) =>
  stack.api.server.inject({ method, url, headers: AUTH, ...(payload === undefined ? {} : { payload }) });

const deliver = (source: string, body: string, headers: Record<string, string>): Promise<Response> =>
  stack.api.server.inject({
    method: 'POST',
    url: `/v1/webhooks/${source}`,
    payload: body,
    headers: { 'content-type': 'application/json', ...headers },
  });

const githubHeaders = (body: string, event: string, delivery: string) => ({
  'X-GitHub-Event': event,
  'X-GitHub-Delivery': delivery,
  ...signGithub(GITHUB_SECRET, body),
});

async function eventCount(): Promise<number> {
  return (await stack.sql.query('SELECT count(*)::int AS n FROM events')).rows[0].n;
}

describe('replays under a new delivery id', () => {
  test('a captured GitHub delivery re-sent under a new delivery id and another event type is a duplicate of the original and starts nothing', async () => {
    const activity = await manage('POST', '/v1/activities', {
      name: `on-any-github-${randomUUID().slice(0, 8)}`,
      triggers: [{ type: 'event', event_type: '*', source: 'webhook:github' }],
      tasks: [{ type: 'noop' }],
    });
    expect(activity.statusCode, activity.body).toBe(201);
    const body = JSON.stringify({ action: 'opened', issue: { number: 1, title: randomUUID() } });
    const original = await deliver('github', body, githubHeaders(body, 'issues', 'delivery-1'));
    expect(original.json()).toMatchObject({ status: 'accepted', event_id: 'wh:github:delivery-1' });
    const routesOf = async (eventId: string) =>
      (await manage('GET', `/v1/events/${encodeURIComponent(eventId)}`)).json().routes;
    const [route] = await routesOf('wh:github:delivery-1');
    expect(route).toMatchObject({ activity_id: activity.json().id, outcome: 'started' });
    const before = await eventCount();

    const replay = await deliver('github', body, githubHeaders(body, 'push', 'delivery-2'));
    expect(replay.statusCode, replay.body).toBe(202);
    expect(replay.json()).toMatchObject({ status: 'duplicate', event_id: 'wh:github:delivery-1' });
    // The replay points at the original event, whose one route is unchanged: nothing new started.
    expect(await routesOf('wh:github:delivery-1')).toEqual([route]);
    expect(await eventCount()).toBe(before);
    expect((await manage('GET', `/v1/events/${encodeURIComponent('wh:github:delivery-2')}`)).statusCode).toBe(404);
  });

  test('an HMAC delivery without an id or timestamp, re-sent byte for byte, is a duplicate of the first rather than a new event', async () => {
    const body = JSON.stringify({ type: 'invoice.paid', amount: 100, nonce: randomUUID() });
    const first = await deliver(
      'plain',
      body,
      signHmac({ secret: PLAIN_SECRET, signature_header: 'X-Signature', signature_prefix: '' }, body),
    );
    expect(first.json()).toMatchObject({ status: 'accepted', event_id_assigned: true });
    const before = await eventCount();
    const again = await deliver('plain', body, {
      ...signHmac({ secret: PLAIN_SECRET, signature_header: 'X-Signature', signature_prefix: '' }, body),
      'idempotency-key': 'new-key',
    });
    expect(again.json()).toMatchObject({ status: 'duplicate', event_id: first.json().event_id });
    expect(await eventCount()).toBe(before);
  });

  test('a delivery whose event was removed (retention) takes its signed bytes with it', async () => {
    const body = JSON.stringify({ action: 'closed', issue: { number: 2, title: randomUUID() } });
    expect((await deliver('github', body, githubHeaders(body, 'issues', 'to-purge'))).json().status).toBe('accepted');
    expect(
      (await stack.sql.query(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE event_id = 'wh:github:to-purge'`))
        .rows[0].n,
    ).toBe(1);
    await stack.sql.query(`DELETE FROM event_routes WHERE event_id = 'wh:github:to-purge'`);
    await stack.sql.query(`DELETE FROM events WHERE event_id = 'wh:github:to-purge'`);
    expect(
      (await stack.sql.query(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE event_id = 'wh:github:to-purge'`))
        .rows[0].n,
    ).toBe(0);
  });
});

describe('registration', () => {
  test('a GitHub source is refused until it opts in to the unsigned event-type header and to replays without a timestamp', async () => {
    const refused = await manage('POST', '/v1/webhook-sources', {
      name: 'gh-new',
      scheme: 'github',
      secret: GITHUB_SECRET,
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().errors.map((issue: { path: string }) => issue.path)).toEqual([
      'event_type_from_unsigned_header',
      'allow_replay_without_timestamp',
    ]);
  });

  test('an HMAC source without a timestamp header is refused with a 400 naming allow_replay_without_timestamp', async () => {
    const refused = await manage('PUT', '/v1/webhook-sources/no-stamp', {
      scheme: 'hmac_sha256',
      secret: PLAIN_SECRET,
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().errors).toEqual([
      expect.objectContaining({
        path: 'allow_replay_without_timestamp',
        message: expect.stringContaining('timestamp_header'),
      }),
    ]);
  });

  test('a secret shorter than 16 characters is refused with a 400 naming secret', async () => {
    const refused = await manage('POST', '/v1/webhook-sources', {
      name: 'weak',
      scheme: 'hmac_sha256',
      secret: 'short-secret',
      timestamp_header: 'X-Timestamp',
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().errors).toEqual([
      { path: 'secret', message: 'the secret must be at least 16 characters; this one has 12' },
    ]);
  });
});

describe('event ids of webhook deliveries', () => {
  test('POST /v1/events cannot claim an id in the webhook namespace', async () => {
    const response = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      headers: AUTH,
      payload: {
        event_id: 'wh:github:future-delivery',
        event_type: 'push',
        source: 'ci',
        occurred_at: new Date().toISOString(),
        data: {},
      },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().errors[0]).toMatchObject({
      path: 'event_id',
      message: expect.stringContaining('reserved for webhook deliveries'),
    });
  });

  test('an event posted first under a delivery id does not block the genuine delivery with that id', async () => {
    const delivery = randomUUID();
    const posted = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      headers: AUTH,
      payload: {
        event_id: delivery,
        event_type: 'push',
        source: 'ci',
        occurred_at: new Date().toISOString(),
        data: { forged: true },
      },
    });
    expect(posted.statusCode, posted.body).toBe(202);
    const body = JSON.stringify({ ref: 'refs/heads/main', after: randomUUID() });
    const genuine = await deliver('github', body, githubHeaders(body, 'push', delivery));
    expect(genuine.statusCode, genuine.body).toBe(202);
    expect(genuine.json()).toMatchObject({ status: 'accepted', event_id: `wh:github:${delivery}` });
  });
});

describe('deliveries accepted before ids were namespaced', () => {
  const legacyEvent = (id: string, credential: string | null) =>
    stack.sql.query(
      `INSERT INTO events (event_id, source, event_type, occurred_at, payload, fingerprint, id_origin, routing_state, credential)
       VALUES ($1, 'webhook:github', 'push', now(), '{}'::jsonb, 'legacy', 'delivery_id', 'routed', $2)`,
      [id, credential],
    );

  test('a redelivery of a delivery stored under its bare id before the upgrade is its duplicate, not a new event', async () => {
    const delivery = randomUUID();
    await legacyEvent(delivery, null);
    const body = JSON.stringify({ ref: 'refs/heads/main', after: randomUUID() });
    const before = await eventCount();
    const redelivered = await deliver('github', body, githubHeaders(body, 'push', delivery));
    expect(redelivered.json()).toMatchObject({ status: 'duplicate', event_id: delivery });
    const replayed = await deliver('github', body, githubHeaders(body, 'push', randomUUID()));
    expect(replayed.json()).toMatchObject({ status: 'duplicate', event_id: delivery });
    expect(await eventCount()).toBe(before);
  });

  test('an event under a bare id recorded with a credential (stored since) is not taken for an old delivery', async () => {
    const delivery = randomUUID();
    await legacyEvent(delivery, 'ingest_key:0123456789ab');
    const body = JSON.stringify({ ref: 'refs/heads/main', after: randomUUID() });
    expect((await deliver('github', body, githubHeaders(body, 'push', delivery))).json()).toMatchObject({
      status: 'accepted',
      event_id: `wh:github:${delivery}`,
    });
  });
});

describe('what a refusal reveals', () => {
  test('a delivery to an unknown source gets exactly the answer a bad signature on a known source gets', async () => {
    const body = JSON.stringify({ action: 'opened' });
    const headers = githubHeaders(body, 'issues', 'probe');
    const known = await deliver('github', body, { ...headers, 'X-Hub-Signature-256': `sha256=${'0'.repeat(64)}` });
    const unknown = await deliver('no-such-source', body, headers);
    const comparable = (response: Response) => {
      const { request_id: _id, instance: _instance, ...rest } = response.json();
      return { status: response.statusCode, type: response.headers['content-type'], body: rest };
    };
    expect(known.statusCode).toBe(401);
    expect(comparable(unknown)).toEqual(comparable(known));
  });
});

describe('stored secrets when WEBHOOK_SECRET_KEYS is set', () => {
  const legacyGithub = (secret: string) =>
    JSON.stringify({
      scheme: 'github',
      name: 'legacy',
      secret,
      secret_hint: null,
      event_id: [{ header: 'X-GitHub-Delivery' }],
      event_type: { from: { header: 'X-GitHub-Event' }, suffix: { body: 'action' } },
    });

  test('a plaintext secret stored before the keys were set is sealed at start-up, and the source, stored without the new opt-ins, keeps working', async () => {
    const secret = 'legacy-github-secret-0123456789';
    await stack.sql.query(`INSERT INTO webhook_sources (name, scheme, config) VALUES ('legacy', 'github', $1::jsonb)`, [
      legacyGithub(secret),
    ]);
    const restarted = await createApiApp(
      testConfig(stack.config.databaseUrl, { API_KEYS: TEST_KEY, WEBHOOK_SECRET_KEYS: SECRET_KEY }),
      {
        logger: false,
        dispatcher: false,
        retention: false,
      },
    );
    try {
      const stored = (await stack.sql.query(`SELECT config FROM webhook_sources WHERE name = 'legacy'`)).rows[0].config;
      expect(stored.secret).toEqual({
        v: 1,
        kid: expect.any(String),
        iv: expect.any(String),
        tag: expect.any(String),
        ct: expect.any(String),
      });
      expect(JSON.stringify(stored)).not.toContain(secret);
      const body = JSON.stringify({ action: 'opened', issue: { number: 3 } });
      const response = await restarted.server.inject({
        method: 'POST',
        url: '/v1/webhooks/legacy',
        payload: body,
        headers: {
          'content-type': 'application/json',
          'X-GitHub-Event': 'issues',
          'X-GitHub-Delivery': randomUUID(),
          ...signGithub(secret, body),
        },
      });
      expect(response.statusCode, response.body).toBe(202);
    } finally {
      await restarted.close();
    }
  });

  test('a secret sealed with a key no longer configured is refused exactly like a bad signature, and the log names the source and the key', async () => {
    const secret = 'orphaned-github-secret-0123456789';
    const retiredBox = createSecretBox([randomBytes(32).toString('base64')]);
    const sealed = retiredBox.seal(secret, 'activity-core:webhook-source:orphan');
    const config = {
      ...JSON.parse(legacyGithub('x')),
      name: 'orphan',
      secret: sealed,
      event_type_from_unsigned_header: true,
      allow_replay_without_timestamp: true,
    };
    await stack.sql.query(`INSERT INTO webhook_sources (name, scheme, config) VALUES ('orphan', 'github', $1::jsonb)`, [
      JSON.stringify(config),
    ]);
    const lines: string[] = [];
    const app = await createApiApp(
      testConfig(stack.config.databaseUrl, { API_KEYS: TEST_KEY, WEBHOOK_SECRET_KEYS: SECRET_KEY }),
      {
        logger: { level: 'info', stream: { write: (line: string) => void lines.push(line) } },
        dispatcher: false,
        retention: false,
      },
    );
    try {
      const body = JSON.stringify({ action: 'opened', issue: { number: 5 } });
      const headers = {
        'content-type': 'application/json',
        'X-GitHub-Event': 'issues',
        'X-GitHub-Delivery': randomUUID(),
      };
      const orphaned = await app.server.inject({
        method: 'POST',
        url: '/v1/webhooks/orphan',
        payload: body,
        headers: { ...headers, ...signGithub(secret, body) },
      });
      const badSignature = await app.server.inject({
        method: 'POST',
        url: '/v1/webhooks/github',
        payload: body,
        headers: { ...headers, ...signGithub('not-the-github-secret-0123', body) },
      });
      const comparable = (response: Response) => {
        const { request_id: _id, instance: _instance, ...rest } = response.json();
        return { status: response.statusCode, type: response.headers['content-type'], body: rest };
      };
      expect(orphaned.statusCode, orphaned.body).toBe(401);
      expect(comparable(orphaned)).toEqual(comparable(badSignature));
      const logged = lines
        .map((line) => JSON.parse(line) as { level: number; source?: string; keyId?: string })
        .find((entry) => entry.source === 'orphan' && entry.level >= 50);
      expect(logged).toMatchObject({ source: 'orphan', keyId: retiredBox.keyId });
    } finally {
      await app.close();
    }
  });

  test('a plaintext secret that appears while running is never used: the delivery is refused with 503 and nothing is stored', async () => {
    const secret = 'sneaked-in-plaintext-secret-0123';
    await stack.sql.query(
      `INSERT INTO webhook_sources (name, scheme, config) VALUES ('sneaked', 'github', $1::jsonb)`,
      [legacyGithub(secret).replace('"legacy"', '"sneaked"')],
    );
    const before = await eventCount();
    const body = JSON.stringify({ action: 'opened', issue: { number: 4 } });
    const response = await deliver('sneaked', body, {
      'X-GitHub-Event': 'issues',
      'X-GitHub-Delivery': randomUUID(),
      ...signGithub(secret, body),
    });
    expect(response.statusCode, response.body).toBe(503);
    expect(response.headers['retry-after']).toBeDefined();
    expect(await eventCount()).toBe(before);
  });
});
