import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startStack, type TestStack } from '../../../test/harness';

/** A client that never finishes its request must not hold a connection forever. */
let stack: TestStack;
let port: number;

beforeAll(async () => {
  stack = await startStack({
    worker: false,
    env: { HTTP_REQUEST_TIMEOUT_MS: '1500', HTTP_HEADERS_TIMEOUT_MS: '1000' },
  });
  await stack.api.server.listen({ host: '127.0.0.1', port: 0 });
  port = (stack.api.server.server.address() as AddressInfo).port;
});
afterAll(async () => {
  await stack?.close();
});

/** Sends `text` and then nothing more; resolves with what the server sent once it closes the connection. */
function stallAfter(text: string, giveUpMs: number): Promise<{ closed: boolean; received: string }> {
  return new Promise((resolve) => {
    const socket: Socket = connect({ host: '127.0.0.1', port }, () => socket.write(text));
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      received += chunk;
    });
    socket.on('error', () => undefined);
    const giveUp = setTimeout(() => {
      socket.destroy();
      resolve({ closed: false, received });
    }, giveUpMs);
    socket.on('close', () => {
      clearTimeout(giveUp);
      resolve({ closed: true, received });
    });
  });
}

// Generous: well past the configured timeouts (1 s, 1.5 s) on a loaded machine, far short of "forever".
const GIVE_UP_MS = 30_000;

describe('slow clients', () => {
  test('a client that sends headers and half its body, then stalls, gets 408 and its connection closed', async () => {
    const head = `POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`;
    const result = await stallAfter(`${head}{"event_type":"slow.client","data":{"s":"${'x'.repeat(400)}`, GIVE_UP_MS);
    expect(result.closed).toBe(true);
    if (result.received !== '') expect(result.received).toMatch(/^HTTP\/1\.1 408/);
  });

  test('a client that never finishes its headers gets its connection closed', async () => {
    const result = await stallAfter('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ', GIVE_UP_MS);
    expect(result.closed).toBe(true);
    if (result.received !== '') expect(result.received).toMatch(/^HTTP\/1\.1 408/);
  });

  test('an ordinary request on the same server is still answered', async () => {
    const result = await stallAfter(
      'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
      GIVE_UP_MS,
    );
    expect(result.received).toMatch(/^HTTP\/1\.1 200/);
  });
});
