import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startStack, type TestStack } from '../../../test/harness';

const API_KEY = 'management-key-0123456789abcdefghijkl';

/** A real HTTP request with the Host header a browser would send for the page's own name. */
function get(
  port: number,
  path: string,
  host: string,
  extra: { method?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const headers = { host, ...extra.headers };
    const call = request({ host: '127.0.0.1', port, path, method: extra.method ?? 'GET', headers }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, type: String(response.headers['content-type']), body }),
      );
    });
    call.on('error', reject);
    call.end();
  });
}

async function listening(stack: TestStack): Promise<number> {
  await stack.api.server.listen({ host: '127.0.0.1', port: 0 });
  return (stack.api.server.server.address() as AddressInfo).port;
}

describe('an API without keys (loopback dev mode)', () => {
  let stack: TestStack;
  let port: number;
  beforeAll(async () => {
    stack = await startStack({ worker: false });
    port = await listening(stack);
  });
  afterAll(async () => {
    await stack?.close();
  });

  test('refuses a request whose Host is another name, as a DNS-rebinding page would send', async () => {
    for (const [method, path] of [
      ['GET', '/v1/activities'],
      ['GET', '/healthz'],
      ['GET', '/readyz'],
      ['GET', '/v1/events/x'],
      ['POST', '/v1/webhooks/anything'],
    ] as const) {
      const answer = await get(port, path, 'attacker.example', { method });
      expect(answer.status, path).toBe(403);
      expect(answer.type).toContain('application/problem+json');
      const problem = JSON.parse(answer.body) as { errors: Array<{ path: string; message: string }> };
      expect(problem.errors[0]?.path).toBe('headers.host');
    }
    expect((await get(port, '/v1/activities', `attacker.example:${port}`)).status).toBe(403);
  });

  test('reads the Host header itself: X-Forwarded-Host does not get another name past the check', async () => {
    const answer = await get(port, '/v1/activities', 'attacker.example', {
      headers: { 'x-forwarded-host': 'localhost' },
    });
    expect(answer.status).toBe(403);
  });

  test('answers loopback names', async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, 'localhost']) {
      expect((await get(port, '/v1/activities', host)).status, host).toBe(200);
    }
  });
});

describe('an API with keys', () => {
  let stack: TestStack;
  let port: number;
  beforeAll(async () => {
    stack = await startStack({ worker: false, env: { API_KEYS: API_KEY } });
    port = await listening(stack);
  });
  afterAll(async () => {
    await stack?.close();
  });

  test('answers any Host name: the key, not the name, is what is checked', async () => {
    expect((await get(port, '/healthz', 'api.example.com')).status).toBe(200);
    expect((await get(port, '/v1/activities', 'api.example.com')).status).toBe(401);
  });
});
