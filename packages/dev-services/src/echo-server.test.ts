import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ECHO_BODY_LIMIT_BYTES, startEchoServer, type EchoAnswer, type EchoServer } from './echo-server';

let echo: EchoServer;

beforeAll(async () => {
  echo = await startEchoServer({ port: 0 });
});
afterAll(async () => {
  await echo?.stop();
});

describe('the dev stack echo endpoint', () => {
  test('answers a JSON request with its method, path, query, headers and parsed body', async () => {
    const response = await fetch(`${echo.url}?a=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'k-1' },
      body: JSON.stringify({ order: 'o-42' }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    const body = (await response.json()) as EchoAnswer;
    expect(body).toMatchObject({ method: 'POST', path: '/echo', query: { a: '1' }, body: { order: 'o-42' } });
    expect(body.headers['idempotency-key']).toBe('k-1');
    expect(Date.parse(body.received_at)).not.toBeNaN();
  });

  test('echoes a body that is not JSON as text, and no body as null', async () => {
    const echoed = async (init?: RequestInit) => ((await (await fetch(echo.url, init)).json()) as EchoAnswer).body;
    expect(await echoed({ method: 'PUT', body: 'plain words' })).toBe('plain words');
    expect(await echoed()).toBeNull();
  });

  test('listens on loopback and says so in its URL; other paths are 404', async () => {
    expect(echo.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/echo$/);
    const response = await fetch(echo.url.replace('/echo', '/other'));
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: string }).error).toContain('/echo');
  });

  test('refuses a body over its limit with 413', async () => {
    const response = await fetch(echo.url, { method: 'POST', body: 'x'.repeat(ECHO_BODY_LIMIT_BYTES + 1) });
    expect(response.status).toBe(413);
  });
});
