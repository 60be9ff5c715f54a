import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { AUTH, startStack, TEST_KEY, type TestStack } from './harness';

let keyless: TestStack;
let keyed: TestStack;

beforeAll(async () => {
  [keyless, keyed] = await Promise.all([
    startStack({ worker: false }),
    startStack({ worker: false, env: { API_KEYS: TEST_KEY } }),
  ]);
});
afterAll(async () => {
  await Promise.all([keyless?.close(), keyed?.close()]);
});

describe('the Host check while authentication is off', () => {
  test.each([
    ['GET', '/v1/activities'],
    ['GET', '/readyz'],
    ['POST', '/v1/webhooks/anything'],
  ] as const)(
    'a %s %s naming another host is refused with a 403 naming the Host header, as a DNS-rebinding page would send it',
    async (method, url) => {
      const answer = await keyless.api.server.inject({
        method,
        url,
        headers: { host: 'attacker.example' },
        payload: method === 'POST' ? {} : undefined,
      });
      expect(answer.statusCode, answer.body).toBe(403);
      expect(answer.headers['content-type']).toContain('application/problem+json');
      expect(answer.json()).toMatchObject({
        type: 'urn:activity-core:problem:forbidden',
        errors: [{ path: 'headers.host', message: expect.stringContaining('"attacker.example" is not localhost') }],
      });
    },
  );

  test.each(['localhost:3000', '127.0.0.1:3000', '127.1.2.3', '[::1]:3000', 'LOCALHOST.'])(
    'a request naming the loopback host %s is answered',
    async (host) => {
      const answer = await keyless.api.server.inject({ method: 'GET', url: '/v1/activities', headers: { host } });
      expect(answer.statusCode, answer.body).toBe(200);
    },
  );

  test('X-Forwarded-Host does not get a foreign Host past the check', async () => {
    const answer = await keyless.api.server.inject({
      method: 'GET',
      url: '/v1/activities',
      headers: { host: 'attacker.example', 'x-forwarded-host': 'localhost' },
    });
    expect(answer.statusCode).toBe(403);
  });

  test('with API keys configured any Host is answered: the keys protect the API', async () => {
    const answer = await keyed.api.server.inject({
      method: 'GET',
      url: '/v1/activities',
      headers: { ...AUTH, host: 'api.example.com' },
    });
    expect(answer.statusCode, answer.body).toBe(200);
  });
});
