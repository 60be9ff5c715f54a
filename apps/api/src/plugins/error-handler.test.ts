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

/** A driver error with its SQLSTATE, wrapped the way drizzle hands it to a repository's caller. */
function failedQuery(code: string, message: string): Error {
  const driver = Object.assign(new Error(message), { name: 'error', code, severity: 'FATAL' });
  return new Error('Failed query: select 1\nparams: ', { cause: driver });
}

describe('Postgres errors that reach the handler untranslated', () => {
  test('a lost connection is a 503 with Retry-After, and the driver text is not answered', async () => {
    const response = await answerTo(failedQuery('57P01', 'terminating connection due to administrator command'));
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('5');
    expect(response.json()).toMatchObject({ type: 'urn:activity-core:problem:unavailable' });
    expect(response.body).not.toMatch(/terminating|select 1/);
  });

  test('text Postgres cannot store is a 400 validation problem', async () => {
    const response = await answerTo(failedQuery('22P05', 'unsupported Unicode escape sequence'));
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ type: 'urn:activity-core:problem:validation-error' });
  });

  test('any other database error is a 500 that carries only the request id', async () => {
    const response = await answerTo(failedQuery('42P01', 'relation "missing" does not exist'));
    expect(response.statusCode).toBe(500);
    expect(response.body).not.toMatch(/relation|missing/);
  });
});
