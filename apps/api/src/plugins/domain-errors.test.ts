import {
  ConflictError,
  type DomainError,
  type DomainErrorCode,
  type EventAcceptedWithRoutes,
  EventIdReusedError,
  ForbiddenError,
  InvalidInputError,
  NotFoundError,
  PayloadTooLargeError,
  UnauthorizedError,
  UnavailableError,
  GoneError,
  UnsupportedMediaTypeError,
} from '@activity-core/contracts';
import { DatabaseUnreachableError, UnstorableTextError } from '@activity-core/db';
import { StoreUnreachableError } from '@activity-core/router';
import Fastify from 'fastify';
import { describe, expect, test } from 'vitest';
import { batchItemAnswer as batchItemResult } from '../routes/event-answers';
import { createEventService } from '../services/event-service';
import { DOMAIN_ERROR_ANSWERS, fieldIssuesOf, httpStatusOf, problemOf } from './domain-errors';
import { registerErrorHandler } from './error-handler';
import { PROBLEM_TYPES } from './problem';

/** One error of every code: typed as a Record, so a new code needs a sample here too. */
const SAMPLES: Record<DomainErrorCode, DomainError> = {
  invalid_input: new InvalidInputError('not a valid event envelope', [{ path: 'source', message: 'required' }]),
  unauthorized: new UnauthorizedError('missing bearer key'),
  forbidden: new ForbiddenError('ingest key k1 may not send this event', [
    { path: 'source', message: 'outside scope' },
  ]),
  not_found: new NotFoundError('event', 'e1'),
  conflict: new ConflictError('activity a1 was deleted'),
  payload_too_large: new PayloadTooLargeError('data is over 262144 bytes', [
    { path: 'data', message: 'at most 262144 bytes' },
  ]),
  event_id_reused: new EventIdReusedError('e1'),
  unsupported_media_type: new UnsupportedMediaTypeError(
    'text/csv is not accepted',
    ['application/json'],
    [{ path: 'header.content-type', message: 'send application/json' }],
  ),
  unavailable: new UnavailableError('Temporal is unreachable'),
  gone: new GoneError("event e1's data was cleared"),
};

const EXPECTED_STATUS: Record<DomainErrorCode, number> = {
  invalid_input: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  gone: 410,
  conflict: 409,
  payload_too_large: 413,
  event_id_reused: 422,
  unsupported_media_type: 415,
  unavailable: 503,
};

async function singleAnswer(error: Error) {
  const app = Fastify({ logger: false });
  registerErrorHandler(app);
  app.post('/v1/events', async () => {
    throw error;
  });
  const response = await app.inject({ method: 'POST', url: '/v1/events', payload: {} });
  await app.close();
  return response;
}

async function batchItemAnswer(error: DomainError) {
  const ingest = {
    async ingest(): Promise<EventAcceptedWithRoutes> {
      throw error;
    },
  };
  const service = createEventService({ ingest, events: { get: async () => undefined } });
  const [result] = (
    await service.acceptBatch(
      [{ event_id: 'e1', event_type: 'order.paid', source: 'shop', occurred_at: '2026-03-01T09:00:00Z', data: {} }],
      {
        receivedAt: new Date('2026-03-01T09:00:01Z'),
      },
    )
  ).map(batchItemResult);
  return result!;
}

describe('the domain error table', () => {
  test.each(Object.keys(EXPECTED_STATUS) as DomainErrorCode[])(
    '%s has its documented status and a problem type of its own',
    (code) => {
      expect(httpStatusOf(SAMPLES[code])).toBe(EXPECTED_STATUS[code]);
      expect(PROBLEM_TYPES[DOMAIN_ERROR_ANSWERS[code].kind]).toMatch(/^urn:activity-core:problem:/);
    },
  );

  test('errors translated from Postgres answer through the same table: unreachable is 503, unstorable text is 400', () => {
    expect(httpStatusOf(new DatabaseUnreachableError())).toBe(503);
    expect(httpStatusOf(new StoreUnreachableError(true))).toBe(503);
    expect(httpStatusOf(new UnstorableTextError())).toBe(400);
  });

  test('field issues travel with the errors that carry them and with no other', () => {
    expect(fieldIssuesOf(SAMPLES.invalid_input)).toEqual([{ path: 'source', message: 'required' }]);
    expect(fieldIssuesOf(SAMPLES.forbidden)).toHaveLength(1);
    expect(fieldIssuesOf(SAMPLES.payload_too_large)).toHaveLength(1);
    expect(fieldIssuesOf(SAMPLES.not_found)).toBeUndefined();
    expect(problemOf(SAMPLES.not_found).errors).toBeUndefined();
  });

  test('an unavailable answer names the event id to retry with only when the event may have been stored', () => {
    expect(problemOf(new StoreUnreachableError(false, 'evt_0d6c1b7e')).event_id).toBe('evt_0d6c1b7e');
    expect(problemOf(new StoreUnreachableError(true, 'evt_0d6c1b7e')).event_id).toBeUndefined();
    expect(problemOf(SAMPLES.event_id_reused).event_id).toBeUndefined();
  });
});

describe('a batch item and a single request answer the same status for the same domain error', () => {
  test.each(Object.keys(SAMPLES) as DomainErrorCode[])('%s', async (code) => {
    const single = await singleAnswer(SAMPLES[code]);
    const item = await batchItemAnswer(SAMPLES[code]);
    expect(single.statusCode).toBe(EXPECTED_STATUS[code]);
    expect(item).toMatchObject({ ok: false, status: single.statusCode, title: code, event_id: 'e1' });
    expect(single.json().type).toBe(PROBLEM_TYPES[DOMAIN_ERROR_ANSWERS[code].kind]);
  });
});
