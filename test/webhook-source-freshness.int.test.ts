import { randomBytes } from 'node:crypto';
import { signHmac } from '@activity-core/webhooks';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApiApp, type ApiApp } from '../apps/api/src/app';
import { createTestDatabase, testConfig } from './harness';

/**
 * Every API process keeps the webhook sources in memory and re-reads them
 * only when their change counter moved (ADR 0036). Two API apps (each with
 * its own pool and cache) on one database: a change made through one governs
 * the very next request to the other.
 */
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let a: ApiApp;
let b: ApiApp;

beforeAll(async () => {
  database = await createTestDatabase();
  // Secrets sealed at rest, as in production: the cached secret is the opened one.
  const config = testConfig(database.url, { WEBHOOK_SECRET_KEYS: randomBytes(32).toString('base64') });
  a = await createApiApp(config, { logger: false, dispatcher: false });
  b = await createApiApp(config, { logger: false, dispatcher: false });
});

afterAll(async () => {
  await a?.close();
  await b?.close();
  await database?.drop();
});

const source = (secret: string, extra: Record<string, unknown> = {}) =>
  ({ name: 'rotating', scheme: 'hmac_sha256', secret, allow_replay_without_timestamp: true, ...extra }) as const;
const signing = (secret: string) => ({ secret, signature_header: 'X-Signature', signature_prefix: '' });

async function deliver(app: ApiApp, id: string, secret: string): Promise<number> {
  const body = JSON.stringify({ id, type: 'rotation.tick', data: { id } });
  const response = await app.server.inject({
    method: 'POST',
    url: '/v1/webhooks/rotating',
    payload: body,
    headers: { 'content-type': 'application/json', ...signHmac(signing(secret), body) },
  });
  return response.statusCode;
}

const SECRET_1 = 'first-secret-0123456789abcdef0123';
const SECRET_2 = 'second-secret-0123456789abcdef012';

describe('webhook sources changed through another API process', () => {
  test('a secret rotated through one process verifies the very next delivery to the other, and the old secret no longer does', async () => {
    expect(
      (await a.server.inject({ method: 'PUT', url: '/v1/webhook-sources/rotating', payload: source(SECRET_1) }))
        .statusCode,
    ).toBe(201);
    // b loads (and caches) the source with the first secret.
    expect(await deliver(b, 'before-rotation', SECRET_1)).toBe(202);

    expect(
      (await a.server.inject({ method: 'PUT', url: '/v1/webhook-sources/rotating', payload: source(SECRET_2) }))
        .statusCode,
    ).toBe(200);

    expect(await deliver(b, 'after-rotation-new-secret', SECRET_2)).toBe(202);
    expect(await deliver(b, 'after-rotation-old-secret', SECRET_1)).toBe(401);
  });

  test('a source removed through one process refuses the very next delivery to the other', async () => {
    expect(
      (await a.server.inject({ method: 'PUT', url: '/v1/webhook-sources/rotating', payload: source(SECRET_1) }))
        .statusCode,
    ).toBeLessThan(300);
    expect(await deliver(b, 'before-removal', SECRET_1)).toBe(202);

    expect((await a.server.inject({ method: 'DELETE', url: '/v1/webhook-sources/rotating' })).statusCode).toBe(204);

    expect(await deliver(b, 'after-removal', SECRET_1)).toBe(401);
  });

  test("a source's custom event_source set through one process is reserved for the very next event posted to the other", async () => {
    const post = () =>
      b.server.inject({
        method: 'POST',
        url: '/v1/events',
        payload: {
          event_type: 'partner.update',
          source: 'partner-feed',
          occurred_at: '2026-03-01T09:00:00Z',
          data: {},
        },
      });
    expect((await post()).statusCode).toBe(202);

    expect(
      (
        await a.server.inject({
          method: 'PUT',
          url: '/v1/webhook-sources/rotating',
          payload: source(SECRET_1, { event_source: 'partner-feed' }),
        })
      ).statusCode,
    ).toBeLessThan(300);

    const refused = await post();
    expect(refused.statusCode).toBe(400);
    expect(refused.json().errors).toEqual([
      expect.objectContaining({ path: 'source', message: expect.stringContaining('webhook source "rotating"') }),
    ]);
  });

  // b checks a posted event against the sources it loaded last, without a read of its own: the statement that
  // stores the event checks their change counter, and b checks again when it moved (ADR 0048).
  const event = (id: string, eventSource: string) => ({
    event_id: id,
    event_type: 'partner.update',
    source: eventSource,
    occurred_at: '2026-03-01T09:00:00Z',
    data: {},
  });
  const postTo = (app: ApiApp, payload: unknown) =>
    app.server.inject({ method: 'POST', url: '/v1/events', payload: payload as Record<string, unknown> });
  const stamp = async (eventSource: string) =>
    (
      await a.server.inject({
        method: 'PUT',
        url: '/v1/webhook-sources/rotating',
        payload: source(SECRET_1, { event_source: eventSource }),
      })
    ).statusCode;

  test('a source reserved through one process refuses the next redelivery sent to the other, whose sources are stale', async () => {
    // b stores an event of `partner-redelivery` (and has the sources loaded: none reserves it).
    expect((await postTo(b, event('freshness-redelivered', 'partner-redelivery'))).json().status).toBe('accepted');
    expect(await stamp('partner-redelivery')).toBeLessThan(300);

    // b's cached sources pass it; the statement sees the counter moved and answers nothing; b checks again: refused.
    const redelivery = await postTo(b, event('freshness-redelivered', 'partner-redelivery'));
    expect(redelivery.statusCode).toBe(400);
    expect(redelivery.json().errors).toEqual([expect.objectContaining({ path: 'source' })]);
  });

  test('a source reserved through one process refuses the next batch item sent to the other, and stores nothing of it', async () => {
    expect((await postTo(b, event('freshness-batch-first', 'partner-batch'))).json().status).toBe('accepted');
    expect(await stamp('partner-batch')).toBeLessThan(300);

    const batch = await postTo(b, [
      event('freshness-batch-reserved', 'partner-batch'),
      event('freshness-batch-other', 'other'),
    ]);
    expect(batch.statusCode).toBe(202);
    expect(batch.json().results).toEqual([
      expect.objectContaining({
        index: 0,
        ok: false,
        status: 400,
        errors: [expect.objectContaining({ path: '[0].source' })],
      }),
      expect.objectContaining({ index: 1, ok: true, status: 'accepted' }),
    ]);
    expect((await b.server.inject({ method: 'GET', url: '/v1/events/freshness-batch-reserved' })).statusCode).toBe(404);
    expect((await b.server.inject({ method: 'GET', url: '/v1/events/freshness-batch-other' })).statusCode).toBe(200);
  });

  test('a source released through one process is accepted by the other at once, though its cached sources still reserve it', async () => {
    // b's sources reserve `partner-batch` (the test before); a moves the stamp to another source.
    expect((await postTo(b, event('freshness-still-reserved', 'partner-batch'))).statusCode).toBe(400);
    expect(await stamp('partner-moved')).toBeLessThan(300);

    const released = await postTo(b, event('freshness-released', 'partner-batch'));
    expect(released.statusCode).toBe(202);
    expect(released.json().status).toBe('accepted');
  });
});
