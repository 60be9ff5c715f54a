import { describe, expect, test } from 'vitest';
import {
  ActivityCoreProblem,
  ConflictProblem,
  EventIdReusedProblem,
  NotFoundProblem,
  problemCode,
  problemFromAnswer,
  RateLimitedProblem,
  UnavailableProblem,
  InvalidInputProblem,
} from './problem';

const answer = (status: number, body: unknown, extra: { contentType?: string; retryAfterSeconds?: number } = {}) => ({
  status,
  statusText: '',
  contentType: extra.contentType ?? 'application/problem+json; charset=utf-8',
  body: typeof body === 'string' ? body : JSON.stringify(body),
  ...(extra.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: extra.retryAfterSeconds }),
});

describe('problems from answers', () => {
  test('an invalid-input problem keeps every member of the document, and the field errors', () => {
    const body = {
      type: 'urn:activity-core:problem:validation-error',
      title: 'Invalid request',
      status: 400,
      detail: 'name: must be lowercase',
      instance: '/v1/activities',
      request_id: 'req-1',
      errors: [{ path: 'name', message: 'must be lowercase', code: 'invalid_format' }],
      hint: 'an extension member',
    };
    const problem = problemFromAnswer(answer(400, body));
    expect(problem).toBeInstanceOf(InvalidInputProblem);
    expect(problem).toBeInstanceOf(ActivityCoreProblem);
    expect(problem).toBeInstanceOf(Error);
    expect(problem).toMatchObject({
      code: 'invalid_input',
      type: body.type,
      title: 'Invalid request',
      status: 400,
      detail: body.detail,
      instance: '/v1/activities',
      request_id: 'req-1',
      errors: body.errors,
    });
    expect(problem.problem.hint).toBe('an extension member');
    expect(problem.message).toBe('400 Invalid request: name: must be lowercase');
    expect(problem.name).toBe('InvalidInputProblem');
  });

  test.each([
    ['not-found', 404, NotFoundProblem, 'not_found'],
    ['conflict', 409, ConflictProblem, 'conflict'],
    ['event-id-reused', 422, EventIdReusedProblem, 'event_id_reused'],
    ['rate-limited', 429, RateLimitedProblem, 'rate_limited'],
    ['unavailable', 503, UnavailableProblem, 'unavailable'],
  ] as const)('a %s problem is its own class with code %s', (type, status, Class, code) => {
    const problem = problemFromAnswer(
      answer(status, { type: `urn:activity-core:problem:${type}`, title: 't', status }),
    );
    expect(problem).toBeInstanceOf(Class);
    expect(problem.code).toBe(code);
  });

  test('a 503 carries the event id to retry with and the Retry-After in seconds', () => {
    const problem = problemFromAnswer(
      answer(
        503,
        { type: 'urn:activity-core:problem:unavailable', title: 'Service unavailable', status: 503, event_id: 'evt-1' },
        { retryAfterSeconds: 5 },
      ),
    );
    expect(problem).toMatchObject({ event_id: 'evt-1', retry_after: 5, errors: [] });
  });

  test('an unknown problem type is a plain problem with code unknown', () => {
    const problem = problemFromAnswer(
      answer(418, { type: 'https://example.test/teapot', title: 'Teapot', status: 418 }),
    );
    expect(problem.constructor).toBe(ActivityCoreProblem);
    expect(problem.code).toBe('unknown');
  });

  test('an answer that is not a problem document (a proxy page) becomes an about:blank problem with its status', () => {
    const problem = problemFromAnswer({
      status: 502,
      statusText: 'Bad Gateway',
      contentType: 'text/html',
      body: '<html>upstream down</html>',
    });
    expect(problem).toBeInstanceOf(UnavailableProblem);
    expect(problem).toMatchObject({
      type: 'about:blank',
      title: 'Bad Gateway',
      status: 502,
      detail: '<html>upstream down</html>',
      code: 'unavailable',
    });
    expect(
      problemFromAnswer({ status: 404, statusText: '', contentType: 'application/json', body: '{"oops":1}' }),
    ).toMatchObject({ code: 'not_found', title: 'HTTP 404' });
    expect(
      problemFromAnswer({ status: 500, statusText: '', contentType: 'application/json', body: '{not json' }).code,
    ).toBe('internal');
  });

  test('codes follow the documented problem types', () => {
    expect(problemCode('urn:activity-core:problem:invalid-json', 400)).toBe('invalid_json');
    expect(problemCode('urn:activity-core:problem:invalid-signature', 401)).toBe('invalid_signature');
    expect(problemCode('urn:activity-core:problem:internal-error', 500)).toBe('internal');
    expect(problemCode('urn:activity-core:problem:something-new', 400)).toBe('unknown');
  });
});
