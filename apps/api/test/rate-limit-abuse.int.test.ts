import { randomUUID } from 'node:crypto';
import { signHmac } from '@activity-core/webhooks';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApiApp } from '../src/app';
import { AUTH, startStack, TEST_KEY, testConfig, type TestStack } from '../../../test/harness';

/**
 * Junk must not spend anyone's budget: unsigned deliveries and wrong keys are
 * limited per client address (behind a trusted proxy, the real client; an
 * IPv6 /64), but never refuse a genuine delivery or a right key; only new
 * verified deliveries count against a webhook source.
 */

const SOURCE_BUDGET = 10;
const FAILURES = 3;
const OTHER_KEY = 'second-management-key-0123456789abcdef';

let stack: TestStack;

const hmac = (name: string) =>
  ({
    name,
    scheme: 'hmac_sha256',
    secret: `${name}-secret-0123456789abcdef`,
    signature_header: 'X-Signature',
    signature_prefix: '',
    timestamp_header: 'X-Timestamp',
  }) as const;

beforeAll(async () => {
  stack = await startStack({
    worker: false,
    env: {
      API_KEYS: `${TEST_KEY},${OTHER_KEY}`,
      RATE_LIMIT_MAX: String(SOURCE_BUDGET),
      RATE_LIMIT_WINDOW_SECONDS: '600',
      AUTH_FAILURE_LIMIT: String(FAILURES),
      // The socket peer (inject's 127.0.0.1) is the proxy; X-Forwarded-For names the client.
      TRUST_PROXY: '127.0.0.1',
    },
  });
  for (const name of ['target', 'busy', 'quiet', 'shared', 'replayed', 'v6']) {
    expect(
      (
        await stack.api.server.inject({
          method: 'POST',
          url: '/v1/webhook-sources',
          headers: AUTH,
          payload: hmac(name),
        })
      ).statusCode,
    ).toBe(201);
  }
});
afterAll(async () => {
  await stack?.close();
});

type Response = Awaited<ReturnType<TestStack['api']['server']['inject']>>;

function deliver(source: string, from: string, signed: boolean): Promise<Response> {
  const body = JSON.stringify({ id: randomUUID(), type: 'invoice.paid' });
  const headers = signed
    ? signHmac(hmac(source), body)
    : { 'X-Signature': 'deadbeef', 'X-Timestamp': String(Math.floor(Date.now() / 1000)) };
  return send(source, from, body, headers);
}

function send(source: string, from: string, body: string, headers: Record<string, string>): Promise<Response> {
  return stack.api.server.inject({
    method: 'POST',
    url: `/v1/webhooks/${source}`,
    payload: body,
    headers: { 'content-type': 'application/json', 'x-forwarded-for': from, ...headers },
  });
}

function expectLimited(response: Response): void {
  expect(response.statusCode, response.body).toBe(429);
  expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
  expect(response.json().type).toBe('urn:activity-core:problem:rate-limited');
}

describe('webhook deliveries', () => {
  test('a flood of unsigned junk is refused per client address and never locks out the real sender', async () => {
    const junk: Response[] = [];
    for (let i = 0; i < 3 * SOURCE_BUDGET; i++) junk.push(await deliver('target', '203.0.113.7', false));
    expect(junk.slice(0, FAILURES).map((r) => r.statusCode)).toEqual(Array(FAILURES).fill(401));
    for (const response of junk.slice(FAILURES)) expectLimited(response);
    expect(junk.at(-1)!.json().detail).toMatch(/failed verification \(limit 3 per 600 s\)/);

    const genuine = await deliver('target', '198.51.100.1', true);
    expect(genuine.statusCode, genuine.body).toBe(202);
  });

  test('verified deliveries count against their source, whatever address they come from, and not against other sources', async () => {
    const answers: number[] = [];
    for (let i = 0; i < SOURCE_BUDGET + 1; i++)
      answers.push((await deliver('busy', `198.51.100.${10 + i}`, true)).statusCode);
    expect(answers.slice(0, SOURCE_BUDGET)).toEqual(Array(SOURCE_BUDGET).fill(202));
    expect(answers.at(-1)).toBe(429);
    expectLimited(await deliver('busy', '198.51.100.99', true));
    expect((await deliver('quiet', '198.51.100.99', true)).statusCode).toBe(202);
  });

  test('junk sent from a shared sender address never locks out genuine deliveries from that address', async () => {
    // E.g. GitHub: anyone can point a hook with a wrong secret at us, and it comes from GitHub's addresses too.
    const shared = '192.0.2.30';
    for (let i = 0; i < FAILURES; i++) expect((await deliver('shared', shared, false)).statusCode).toBe(401);
    expectLimited(await deliver('shared', shared, false));
    for (let i = 0; i < 3; i++) {
      const genuine = await deliver('shared', shared, true);
      expect(genuine.statusCode, genuine.body).toBe(202);
      expect(genuine.json().status).toBe('accepted');
    }
    expectLimited(await deliver('shared', shared, false));
  });

  test('replays of a captured delivery spend the address allowance, never the source budget', async () => {
    const attacker = '192.0.2.40';
    const body = JSON.stringify({ type: 'invoice.paid', amount: 5, nonce: randomUUID() });
    const headers = { ...signHmac(hmac('replayed'), body), 'Idempotency-Key': `original-${randomUUID()}` };
    const original = await send('replayed', '198.51.100.40', body, headers);
    expect(original.json().status, original.body).toBe('accepted');
    for (let i = 0; i < 2 * SOURCE_BUDGET; i++) {
      // Byte for byte, and under a new idempotency key: both are the same signed bytes.
      const replay = await send(
        'replayed',
        attacker,
        body,
        i % 2 === 0 ? headers : { ...headers, 'Idempotency-Key': `replay-${i}` },
      );
      expect(replay.statusCode, replay.body).toBe(202);
      expect(replay.json()).toMatchObject({ status: 'duplicate', event_id: original.json().event_id });
    }
    // The source still has its budget for new deliveries...
    for (let i = 0; i < SOURCE_BUDGET - 1; i++)
      expect((await deliver('replayed', '198.51.100.41', true)).statusCode).toBe(202);
    // ...and the replaying address is over its own limit for anything that fails.
    expectLimited(await deliver('replayed', attacker, false));
  });

  test('failures from anywhere in one IPv6 /64 count together; another /64 is unaffected', async () => {
    for (let i = 0; i < FAILURES; i++)
      expect((await deliver('v6', `2001:db8:7:8::${i + 1}`, false)).statusCode).toBe(401);
    expectLimited(await deliver('v6', '2001:db8:7:8:ffff:ffff:ffff:fff0', false));
    expect((await deliver('v6', '2001:db8:7:9::1', false)).statusCode).toBe(401);
  });
});

describe('bearer keys', () => {
  const listActivities = (from: string, key: string) =>
    stack.api.server.inject({
      method: 'GET',
      url: '/v1/activities',
      headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': from },
    });

  test('after too many failed keys an address gets 429 with Retry-After for wrong keys, while a right key from it still works', async () => {
    const wrong = 'wrong-key-0123456789abcdef0123456789';
    for (let i = 0; i < FAILURES; i++) expect((await listActivities('203.0.113.50', wrong)).statusCode).toBe(401);
    const limited = await listActivities('203.0.113.50', wrong);
    expectLimited(limited);
    expect(limited.json().detail).toMatch(/too many failed API key attempts from this address \(limit 3 per 600 s\)/);
    // Behind one NAT, one client guessing must not lock out the others.
    expect((await listActivities('203.0.113.50', OTHER_KEY)).statusCode).toBe(200);
    expectLimited(
      await stack.api.server.inject({
        method: 'GET',
        url: '/v1/activities',
        headers: { 'x-forwarded-for': '203.0.113.50' },
      }),
    );
    expect((await listActivities('203.0.113.51', wrong)).statusCode).toBe(401);
  });

  test('wrong keys from anywhere in one IPv6 /64 count together', async () => {
    const wrong = 'wrong-key-0123456789abcdef0123456789';
    for (let i = 0; i < FAILURES; i++)
      expect((await listActivities(`2001:db8:a:b::${i + 10}`, wrong)).statusCode).toBe(401);
    expectLimited(await listActivities('2001:db8:a:b:1:2:3:4', wrong));
    expect((await listActivities('2001:db8:a:c::10', wrong)).statusCode).toBe(401);
  });
});

describe('TRUST_PROXY', () => {
  test('by default X-Forwarded-For is not believed: the socket address is the client, so a forged header does not escape the limit', async () => {
    const app = await createApiApp(
      testConfig(stack.config.databaseUrl, { API_KEYS: TEST_KEY, AUTH_FAILURE_LIMIT: String(FAILURES) }),
      {
        logger: false,
        dispatcher: false,
        retention: false,
      },
    );
    try {
      const statuses: number[] = [];
      for (let i = 0; i < FAILURES + 1; i++) {
        const response = await app.server.inject({
          method: 'GET',
          url: '/v1/activities',
          headers: { authorization: 'Bearer nope', 'x-forwarded-for': `203.0.113.${100 + i}` },
        });
        statuses.push(response.statusCode);
      }
      expect(statuses).toEqual([...Array(FAILURES).fill(401), 429]);
    } finally {
      await app.close();
    }
  });
});
