/**
 * The client's retries against the real API, behind a proxy that loses
 * answers: a retried event post carries the same Idempotency-Key, so the
 * event is stored once; a refusal (4xx) is never resent; Retry-After is
 * honoured; a request that is not safe to repeat is not repeated.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import {
  ActivityCoreClient,
  ActivityCoreNetworkError,
  RateLimitedProblem,
  UnavailableProblem,
  InvalidInputProblem,
  type RetryInfo,
} from '../src/index';
import { startStack, TEST_KEY, type TestStack } from '../../../test/harness';
import { listen } from './listen';
import { startLossyProxy, type LossyProxy, type ProxyAction } from './lossy-proxy';

let stack: TestStack;
let apiUrl: string;
let direct: ActivityCoreClient;
let proxy: LossyProxy | undefined;

beforeAll(async () => {
  stack = await startStack({ worker: false, env: { API_KEYS: TEST_KEY } });
  apiUrl = await listen(stack);
  direct = new ActivityCoreClient({ baseUrl: apiUrl, apiKey: TEST_KEY });
  await direct.activities.create({
    name: 'retry-target',
    triggers: [{ type: 'event', event_type: 'retry.check' }],
    tasks: [{ type: 'noop' }],
  });
});
afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
});
afterAll(async () => {
  await stack?.close();
});

/** A client behind a proxy that applies `plan[i]` to the i-th request matching `method path` and forwards everything else. */
async function clientBehind(
  method: string,
  path: string,
  plan: ProxyAction[],
  retries: RetryInfo[] = [],
): Promise<ActivityCoreClient> {
  let matched = 0;
  proxy = await startLossyProxy(apiUrl, (request) => {
    if (request.method !== method || request.url.split('?')[0] !== path) return 'forward';
    return plan[matched++] ?? 'forward';
  });
  return new ActivityCoreClient({
    baseUrl: proxy.url,
    apiKey: TEST_KEY,
    retry: { initialDelayMs: 20, maxDelayMs: 200 },
    onRetry: (retry) => retries.push(retry),
  });
}

const seenFor = (method: string, path: string) =>
  proxy!.seen.filter((request) => request.method === method && request.url.split('?')[0] === path);

const event = (data: Record<string, unknown>) => ({
  event_type: 'retry.check',
  source: 'retry-test',
  occurred_at: '2026-03-01T09:00:00Z',
  data,
});

async function storedEvents(pattern: string): Promise<number> {
  const { rows } = await stack.sql.query<{ n: string }>('SELECT count(*) AS n FROM events WHERE event_id LIKE $1', [
    pattern,
  ]);
  return Number(rows[0]!.n);
}

describe('event posting', () => {
  test('an event whose answer was lost is sent again under the same Idempotency-Key and stored once', async () => {
    const retries: RetryInfo[] = [];
    const client = await clientBehind('POST', '/v1/events', ['drop-answer'], retries);

    const answer = await client.events.send(event({ order: 'o-1' }));

    const posts = seenFor('POST', '/v1/events');
    expect(posts).toHaveLength(2);
    const key = posts[0]!.headers['idempotency-key'];
    expect(typeof key).toBe('string');
    expect(posts[1]!.headers['idempotency-key']).toBe(key);
    expect(retries).toEqual([
      expect.objectContaining({ operation: 'sendEvents', attempt: 1, reason: expect.stringMatching(/^network: /) }),
    ]);
    // The first attempt stored it; the retry found it.
    expect(answer).toMatchObject({
      event_id: key,
      event_id_assigned: false,
      status: 'duplicate',
      runs: [{ activity_name: 'retry-target', status: 'duplicate' }],
    });
    expect(await storedEvents(key as string)).toBe(1);
    const stored = await direct.events.get(key as string);
    expect(stored.id_origin).toBe('idempotency_key');
    expect(stored.routes).toHaveLength(1);
  });

  test('an event with its own id is resent as it is and stored once', async () => {
    const client = await clientBehind('POST', '/v1/events', ['drop-answer', 'reset']);

    const answer = await client.events.send({ event_id: 'retry-own-id-1', ...event({ order: 'o-2' }) });

    const posts = seenFor('POST', '/v1/events');
    expect(posts).toHaveLength(3);
    expect(posts.map((post) => post.headers['idempotency-key'])).toEqual([undefined, undefined, undefined]);
    expect(answer).toMatchObject({ event_id: 'retry-own-id-1', status: 'duplicate' });
    expect(await storedEvents('retry-own-id-1')).toBe(1);
  });

  test('a batch without ids whose answer was lost is resent under one key: each item is stored once, as {key}#{index}', async () => {
    const client = await clientBehind('POST', '/v1/events', ['drop-answer']);

    const answer = await client.events.send([event({ item: 0 }), event({ item: 1 }), event({ item: 2 })]);

    const posts = seenFor('POST', '/v1/events');
    expect(posts).toHaveLength(2);
    const key = posts[0]!.headers['idempotency-key'] as string;
    expect(posts[1]!.headers['idempotency-key']).toBe(key);
    expect(
      answer.results.map((result) => (result.ok ? [result.event_id, result.status] : ['failed', result.status])),
    ).toEqual([
      [`${key}#0`, 'duplicate'],
      [`${key}#1`, 'duplicate'],
      [`${key}#2`, 'duplicate'],
    ]);
    expect(await storedEvents(`${key}#%`)).toBe(3);
  });

  test('a 503 with Retry-After is waited out before the same request is sent again', async () => {
    const retries: RetryInfo[] = [];
    const problem = JSON.stringify({
      type: 'urn:activity-core:problem:unavailable',
      title: 'Service unavailable',
      status: 503,
      detail: 'the event store is unreachable',
    });
    const client = await clientBehind(
      'POST',
      '/v1/events',
      [{ status: 503, headers: { 'content-type': 'application/problem+json', 'retry-after': '1' }, body: problem }],
      retries,
    );

    const started = Date.now();
    const answer = await client.events.send(event({ order: 'o-3' }));

    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    expect(retries).toEqual([expect.objectContaining({ attempt: 1, reason: '503 Service unavailable' })]);
    expect(retries[0]!.delayMs).toBeGreaterThanOrEqual(1_000);
    const posts = seenFor('POST', '/v1/events');
    expect(posts).toHaveLength(2);
    expect(posts[1]!.headers['idempotency-key']).toBe(posts[0]!.headers['idempotency-key']);
    expect(answer.status).toBe('accepted');
  });

  test('a Retry-After longer than the client waits for is thrown at once, with retry_after', async () => {
    const limited = {
      status: 429,
      headers: { 'content-type': 'application/problem+json', 'retry-after': '120' },
      body: JSON.stringify({ type: 'urn:activity-core:problem:rate-limited', title: 'Too many requests', status: 429 }),
    };
    const client = await clientBehind('POST', '/v1/events', [limited]);

    const error = await client.events.send(event({ order: 'o-4' })).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(RateLimitedProblem);
    expect(error).toMatchObject({ code: 'rate_limited', status: 429, retry_after: 120 });
    expect(seenFor('POST', '/v1/events')).toHaveLength(1);
  });

  test('a refused event (400) is not sent again, and the problem names the field', async () => {
    const client = await clientBehind('POST', '/v1/events', []);

    const error = await client.events
      .send({ event_type: 'retry.check', source: 'retry-test', occurred_at: 'yesterday' })
      .catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(InvalidInputProblem);
    const problem = error as InvalidInputProblem;
    expect(problem).toMatchObject({
      code: 'invalid_input',
      status: 400,
      type: 'urn:activity-core:problem:validation-error',
      instance: '/v1/events',
    });
    expect(problem.errors.map((issue) => issue.path)).toContain('occurred_at');
    expect(typeof problem.request_id).toBe('string');
    expect(seenFor('POST', '/v1/events')).toHaveLength(1);
  });

  test('a 503 on every attempt ends in the problem after the configured attempts', async () => {
    const unavailable = {
      status: 503,
      headers: { 'content-type': 'application/problem+json' },
      body: JSON.stringify({
        type: 'urn:activity-core:problem:unavailable',
        title: 'Service unavailable',
        status: 503,
        event_id: 'whatever',
      }),
    };
    const client = await clientBehind(
      'POST',
      '/v1/events',
      Array.from({ length: 10 }, () => unavailable),
    );

    const error = await client.events.send(event({ order: 'o-5' })).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(UnavailableProblem);
    expect(error).toMatchObject({ code: 'unavailable', event_id: 'whatever' });
    const posts = seenFor('POST', '/v1/events');
    expect(posts).toHaveLength(5);
    expect(new Set(posts.map((post) => post.headers['idempotency-key'])).size).toBe(1);
  });
});

describe('other requests', () => {
  test('a register (POST) whose answer was lost is not repeated: the caller is told nothing came back', async () => {
    const client = await clientBehind('POST', '/v1/activities', ['drop-answer']);

    const error = await client.activities
      .create({ name: 'retry-post-once', tasks: [{ type: 'noop' }] })
      .catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(ActivityCoreNetworkError);
    expect(error).toMatchObject({ code: 'network', attempts: 1 });
    expect(seenFor('POST', '/v1/activities')).toHaveLength(1);
    // It was registered all the same: a blind resend would have been a 409. PUT with an own id is the retry-safe create.
    expect(await direct.activities.findByName('retry-post-once')).toBeDefined();
  });

  test('a PUT whose answer was lost is resent and leaves one activity at version 1', async () => {
    const id = '6f0c3a59-8d3e-4c1e-9f43-0c1d2e3f4a5b';
    const client = await clientBehind('PUT', `/v1/activities/${id}`, ['drop-answer']);

    const record = await client.activities.put(id, { name: 'retry-put', tasks: [{ type: 'noop' }] });

    expect(seenFor('PUT', `/v1/activities/${id}`)).toHaveLength(2);
    expect(record).toMatchObject({ id, name: 'retry-put', version: 1 });
    const { rows } = await stack.sql.query<{ n: string }>(
      "SELECT count(*) AS n FROM activity_definitions WHERE name = 'retry-put'",
    );
    expect(Number(rows[0]!.n)).toBe(1);
  });

  test('trigger now sends one generated Idempotency-Key on every attempt, so a retried trigger is one run', async () => {
    const cron = await direct.activities.create({
      name: 'retry-trigger',
      triggers: [{ type: 'cron', cron: '0 0 1 1 *' }],
      tasks: [{ type: 'noop' }],
    });
    const path = `/v1/activities/${cron.id}/schedules/trigger`;
    const client = await clientBehind('POST', path, ['drop-answer']);

    const answer = await client.schedules.trigger(cron.id);

    const posts = seenFor('POST', path);
    expect(posts).toHaveLength(2);
    expect(posts[1]!.headers['idempotency-key']).toBe(posts[0]!.headers['idempotency-key']);
    expect(answer).toMatchObject({
      key: posts[0]!.headers['idempotency-key'],
      key_generated: false,
      status: 'duplicate',
    });
  });
});
