import Fastify from 'fastify';
import { describe, expect, test } from 'vitest';
import { StoreUnreachableError } from '@activity-core/router';
import { registerErrorHandler } from './error-handler';

async function answerTo(error: Error) {
  const app = Fastify({ logger: false });
  registerErrorHandler(app);
  app.post('/v1/events', async () => {
    throw error;
  });
  const response = await app.inject({ method: 'POST', url: '/v1/events', payload: {} });
  await app.close();
  return response;
}

describe('503 answers from the event store', () => {
  test('when the store failed after the write began, the answer names the event id to retry with, an assigned one included', async () => {
    const response = await answerTo(new StoreUnreachableError(false, 'evt_0d6c1b7e'));
    expect(response.statusCode).toBe(503);
    expect(response.headers['content-type']).toMatch(/application\/problem\+json/);
    const body = response.json() as { event_id?: string; detail: string };
    expect(body.event_id).toBe('evt_0d6c1b7e');
    expect(body.detail).toContain('"evt_0d6c1b7e"');
  });

  test('when nothing was stored, the answer carries no event id: a retry under any id is safe', async () => {
    const response = await answerTo(new StoreUnreachableError(true, 'evt_0d6c1b7e'));
    expect(response.statusCode).toBe(503);
    expect((response.json() as { event_id?: string }).event_id).toBeUndefined();
  });
});
