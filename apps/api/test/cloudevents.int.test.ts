import { createHash } from 'node:crypto';
import { eventRunWorkflowId, sourceScopedEventId } from '@activity-core/contracts';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startStack, waitFor, type TestStack } from '../../../test/harness';

/**
 * CloudEvents 1.0 on POST /v1/events in every content mode of the HTTP
 * binding — structured, batched and binary — on the real API, Postgres,
 * Temporal and worker: each is the same event as its JSON form, goes through
 * the same ingest (ids, duplicates, limits, credentials, rate limits), and
 * every refusal is a problem naming the field.
 */
const API_KEY = 'cloudevents-management-key-0123456789';
const SCOPED_KEY = 'cloudevents-scoped-ingest-key-0123456789';
const keyId = (key: string) => createHash('sha256').update(key).digest('hex').slice(0, 12);
const DATA_LIMIT = 8 * 1024;
const BODY_LIMIT = 64 * 1024;

let stack: TestStack;
let activityId: string;

beforeAll(async () => {
  stack = await startStack({
    env: {
      API_KEYS: API_KEY,
      INGEST_KEYS: SCOPED_KEY,
      INGEST_KEY_SCOPES: JSON.stringify({ [keyId(SCOPED_KEY)]: { sources: ['/shop*'], event_types: ['ce.*'] } }),
      EVENT_DATA_LIMIT_BYTES: String(DATA_LIMIT),
      BODY_LIMIT_BYTES: String(BODY_LIMIT),
    },
  });
  const created = await inject({
    method: 'POST',
    url: '/v1/activities',
    payload: {
      name: 'cloudevents-orders',
      triggers: [{ type: 'event', event_type: 'ce.order.paid', source: '/shop' }],
      tasks: [{ type: 'noop' }],
    },
  });
  expect(created.statusCode, created.body).toBe(201);
  activityId = created.json().id as string;
});
afterAll(async () => {
  await stack?.close();
});

type Injected = Awaited<ReturnType<TestStack['api']['server']['inject']>>;
type Headers = Record<string, string | string[]>;

function inject(options: {
  method: 'GET' | 'POST';
  url: string;
  payload?: string | object;
  headers?: Headers;
  key?: string;
}): Promise<Injected> {
  const { key = API_KEY, headers = {}, ...rest } = options;
  return stack.api.server.inject({ ...rest, headers: { authorization: `Bearer ${key}`, ...headers } });
}

/** The same event in every form: the JSON envelope's fields and the CloudEvent attributes. */
const TIME = '2026-03-01T09:00:00Z';
const SUBJECT = 'orders/42 €';
const DATA = { order_id: 'o-42', amount: 250, lines: [{ sku: 'a', qty: 2 }] };
const envelope = (id: string, data: object = DATA) => ({
  event_id: id,
  event_type: 'ce.order.paid',
  source: '/shop',
  occurred_at: TIME,
  subject: SUBJECT,
  data,
});
const cloudEvent = (id: string, data: object = DATA) => ({
  specversion: '1.0',
  id,
  type: 'ce.order.paid',
  source: '/shop',
  time: TIME,
  subject: SUBJECT,
  datacontenttype: 'application/json',
  data,
});
const binaryHeaders = (id: string): Headers => ({
  'ce-specversion': '1.0',
  'ce-id': id,
  'ce-type': 'ce.order.paid',
  'ce-source': '/shop',
  'ce-time': TIME,
  'ce-subject': 'orders%2F42%20%E2%82%AC',
});

const sendJson = (payload: unknown, headers: Headers = {}) =>
  inject({
    method: 'POST',
    url: '/v1/events',
    payload: JSON.stringify(payload),
    headers: { 'content-type': 'application/json', ...headers },
  });
const sendStructured = (payload: unknown, headers: Headers = {}) =>
  inject({
    method: 'POST',
    url: '/v1/events',
    payload: JSON.stringify(payload),
    headers: { 'content-type': 'application/cloudevents+json; charset=utf-8', ...headers },
  });
const sendBatch = (payload: unknown, headers: Headers = {}) =>
  inject({
    method: 'POST',
    url: '/v1/events',
    payload: JSON.stringify(payload),
    headers: { 'content-type': 'application/cloudevents-batch+json', ...headers },
  });
const sendBinary = (headers: Headers, data: unknown = DATA, contentType = 'application/json', key?: string) =>
  inject({
    method: 'POST',
    url: '/v1/events',
    ...(data === undefined ? {} : { payload: typeof data === 'string' ? data : JSON.stringify(data) }),
    headers: { ...(data === undefined ? {} : { 'content-type': contentType }), ...headers },
    ...(key === undefined ? {} : { key }),
  });

function expectProblem(response: Injected, status: number, path: string, says?: string) {
  expect(response.statusCode, response.body).toBe(status);
  expect(response.headers['content-type']).toContain('application/problem+json');
  const body = response.json();
  expect(body.errors, response.body).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ path, ...(says === undefined ? {} : { message: expect.stringContaining(says) }) }),
    ]),
  );
  return body;
}

const storedEnvelope = async (id: string) => {
  const response = await inject({ method: 'GET', url: `/v1/events/${encodeURIComponent(id)}` });
  expect(response.statusCode, response.body).toBe(200);
  return response.json().envelope;
};
const storedEvents = async (): Promise<number> =>
  (await stack.sql.query('SELECT count(*)::int AS n FROM events')).rows[0].n;

describe('each content mode is the same event as its JSON form', () => {
  test("structured, batched and binary mode are each accepted, stored with the JSON form's envelope and routed to a run that completes", async () => {
    const answers = {
      json: await sendJson(cloudEvent('ce-mode-json')),
      structured: await sendStructured(cloudEvent('ce-mode-structured')),
      batched: await sendBatch([cloudEvent('ce-mode-batched')]),
      binary: await sendBinary(binaryHeaders('ce-mode-binary')),
      envelope: await sendJson(envelope('ce-mode-envelope')),
    };
    for (const [mode, response] of Object.entries(answers)) {
      expect(response.statusCode, `${mode}: ${response.body}`).toBe(202);
      const answer = mode === 'batched' ? response.json().results[0] : response.json();
      expect(answer, mode).toMatchObject({
        event_id: `ce-mode-${mode}`,
        status: 'accepted',
        runs: [{ workflow_id: eventRunWorkflowId(activityId, `ce-mode-${mode}`), status: 'started' }],
      });
      expect(await storedEnvelope(`ce-mode-${mode}`), mode).toEqual(envelope(`ce-mode-${mode}`));
      const runId = answer.runs[0].run_id as string;
      await waitFor(`the ${mode} run to succeed`, async () => {
        const run = await inject({ method: 'GET', url: `/v1/runs/${runId}` });
        return run.statusCode === 200 && run.json().status === 'succeeded' ? run.json() : undefined;
      });
    }
  });

  test('the same event id sent again in any mode is a duplicate; with other data it is a 422, whatever the mode', async () => {
    const first = await sendBinary(binaryHeaders('ce-dup-1'));
    expect(first.json()).toMatchObject({ status: 'accepted', runs: [{ status: 'started' }] });
    expect((await sendJson(envelope('ce-dup-1'))).json()).toMatchObject({
      status: 'duplicate',
      runs: [{ status: 'duplicate' }],
    });
    expect((await sendStructured(cloudEvent('ce-dup-1'))).json()).toMatchObject({ status: 'duplicate' });
    expect((await sendBatch([cloudEvent('ce-dup-1')])).json().results).toEqual([
      expect.objectContaining({ ok: true, status: 'duplicate' }),
    ]);
    expect((await sendBinary(binaryHeaders('ce-dup-1'))).json()).toMatchObject({ status: 'duplicate' });

    const other = { ...DATA, amount: 999 };
    expect((await sendBinary(binaryHeaders('ce-dup-1'), other)).statusCode).toBe(422);
    expect((await sendStructured(cloudEvent('ce-dup-1', other))).statusCode).toBe(422);
    expect((await sendBatch([cloudEvent('ce-dup-1', other)])).json().results).toEqual([
      expect.objectContaining({ ok: false, status: 422, title: 'event_id_reused' }),
    ]);
    const runs = await stack.sql.query("SELECT count(*)::int AS n FROM event_routes WHERE event_id = 'ce-dup-1'");
    expect(runs.rows[0].n).toBe(1);
  });

  test('binary mode: no body is empty data, any +json data type is read, quoted values are unquoted, extensions are not kept, no ce-time is the receive time', async () => {
    const before = Date.now();
    const headers: Headers = {
      ...binaryHeaders('ce-binary-nobody'),
      'ce-subject': '"orders/42 %E2%82%AC"',
      'ce-traceparent': '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    };
    delete headers['ce-time'];
    const noBody = await sendBinary(headers, undefined);
    expect(noBody.statusCode, noBody.body).toBe(202);
    const stored = await storedEnvelope('ce-binary-nobody');
    expect(stored).toMatchObject({ event_id: 'ce-binary-nobody', subject: SUBJECT, data: {} });
    expect(Object.keys(stored).sort()).toEqual(['data', 'event_id', 'event_type', 'occurred_at', 'source', 'subject']);
    expect(Date.parse(stored.occurred_at)).toBeGreaterThanOrEqual(before - 1000);

    const vendorType = await sendBinary(
      binaryHeaders('ce-binary-vendor'),
      { n: 1 },
      'application/vnd.acme.order+json; charset=utf-8',
    );
    expect(vendorType.statusCode, vendorType.body).toBe(202);
    expect((await storedEnvelope('ce-binary-vendor')).data).toEqual({ n: 1 });
  });

  test('structured mode ignores ce-* headers, which only binary mode reads', async () => {
    const response = await sendStructured(cloudEvent('ce-structured-headers'), {
      'ce-specversion': '0.3',
      'ce-id': 'other',
    });
    expect(response.statusCode, response.body).toBe(202);
    expect(response.json().event_id).toBe('ce-structured-headers');
  });
});

describe('malformed input is a 4xx naming the field, and nothing is stored', () => {
  test('binary mode names the header', async () => {
    const before = await storedEvents();
    const without = (name: string) => {
      const headers = binaryHeaders('ce-bad-binary');
      delete headers[name];
      return headers;
    };
    expectProblem(await sendBinary(without('ce-type')), 400, 'header.ce-type');
    expectProblem(await sendBinary(without('ce-id')), 400, 'header.ce-id');
    expectProblem(await sendBinary(without('ce-source')), 400, 'header.ce-source');
    expectProblem(
      await sendBinary({ ...binaryHeaders('ce-bad-binary'), 'ce-specversion': '0.3' }),
      400,
      'header.ce-specversion',
      '1.0',
    );
    expectProblem(
      await sendBinary({ ...binaryHeaders('ce-bad-binary'), 'ce-type': 'not a type' }),
      400,
      'header.ce-type',
    );
    expectProblem(
      await sendBinary({ ...binaryHeaders('ce-bad-binary'), 'ce-time': 'yesterday' }),
      400,
      'header.ce-time',
      'RFC 3339',
    );
    expectProblem(
      await sendBinary({ ...binaryHeaders('ce-bad-binary'), 'ce-subject': 'a%C0%A0b' }),
      400,
      'header.ce-subject',
      'UTF-8',
    );
    expectProblem(
      await sendBinary({ ...binaryHeaders('ce-bad-binary'), 'ce-subject': '100%' }),
      400,
      'header.ce-subject',
      'percent-encoded',
    );
    expectProblem(
      await sendBinary({ ...binaryHeaders('ce-bad-binary'), 'ce-id': 'emit-1' }),
      400,
      'header.ce-id',
      'emit_event',
    );
    expectProblem(await sendBinary({ ...binaryHeaders('ce-bad-binary'), 'ce-id': 'a%20b' }), 400, 'header.ce-id');
    expectProblem(
      await sendBinary({ ...binaryHeaders('ce-bad-binary'), 'ce-source': ['/shop', '/elsewhere'] }),
      400,
      'header.ce-source',
      'more than once',
    );
    expectProblem(
      await sendBinary({ ...binaryHeaders('ce-bad-binary'), 'ce-datacontenttype': 'application/json' }),
      400,
      'header.ce-datacontenttype',
      'Content-Type',
    );
    expectProblem(
      await sendBinary({ ...binaryHeaders('ce-bad-binary'), 'ce-subject': 'x'.repeat(3000) }),
      400,
      'header.ce-subject',
      'at most 2048',
    );
    const many = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`ce-ext${i}`, 'x']));
    expectProblem(await sendBinary({ ...binaryHeaders('ce-bad-binary'), ...many }), 400, 'headers', 'at most 40');
    expectProblem(
      await sendBinary({ ...binaryHeaders('ce-bad-binary'), 'ce-source': 'webhook:github' }),
      400,
      'header.ce-source',
      'reserved',
    );
    expectProblem(await sendBinary(binaryHeaders('ce-bad-binary'), [1, 2]), 400, 'data');
    const invalidJson = await sendBinary(binaryHeaders('ce-bad-binary'), '{"a":', 'application/json');
    expect(invalidJson.statusCode).toBe(400);
    expect(invalidJson.json().type).toBe('urn:activity-core:problem:invalid-json');
    const idempotencyKey = await sendBinary({ ...binaryHeaders('ce-bad-binary'), 'idempotency-key': 'another-id' });
    expectProblem(idempotencyKey, 400, 'headers.idempotency-key', 'differs');
    expect(await storedEvents()).toBe(before);
  });

  test('structured mode names the attribute', async () => {
    const before = await storedEvents();
    const { id: _id, ...withoutId } = cloudEvent('x');
    expectProblem(await sendStructured(withoutId), 400, 'id');
    expectProblem(await sendStructured({ ...cloudEvent('ce-bad-structured'), specversion: '0.3' }), 400, 'specversion');
    expectProblem(await sendStructured({ ...cloudEvent('ce-bad-structured'), data: 'text' }), 400, 'data');
    expectProblem(
      await sendStructured({ ...cloudEvent('ce-bad-structured'), data_base64: 'aGVsbG8=' }),
      400,
      'data_base64',
      'not accepted',
    );
    expectProblem(
      await sendStructured({ ...cloudEvent('ce-bad-structured'), datacontenttype: 'text/xml' }),
      400,
      'datacontenttype',
      'must be JSON',
    );
    expectProblem(await sendStructured({ ...cloudEvent('ce-bad-structured'), id: 'emit-2' }), 400, 'id', 'emit_event');
    const { specversion: _v, ...envelopeLike } = cloudEvent('ce-bad-structured');
    expectProblem(await sendStructured(envelopeLike), 400, 'specversion');
    expectProblem(await sendStructured([cloudEvent('ce-bad-structured')]), 400, 'body', 'cloudevents-batch+json');
    expect(await storedEvents()).toBe(before);
  });

  test('batched mode answers per item like a JSON batch, and refuses a body that is not an array of at most 100', async () => {
    const { specversion: _v, ...notCloudEvent } = cloudEvent('ce-batch-bad-1');
    const response = await sendBatch(
      [cloudEvent('ce-batch-ok-1'), notCloudEvent, { ...cloudEvent('ce-batch-bad-2'), type: '' }],
      { 'idempotency-key': 'ce-batch-key' },
    );
    expect(response.statusCode, response.body).toBe(202);
    const [ok, missing, badType] = response.json().results;
    expect(ok).toMatchObject({ index: 0, ok: true, event_id: 'ce-batch-ok-1', status: 'accepted' });
    expect(missing).toMatchObject({
      index: 1,
      ok: false,
      status: 400,
      errors: [expect.objectContaining({ path: '[1].specversion' })],
    });
    expect(badType).toMatchObject({
      index: 2,
      ok: false,
      status: 400,
      errors: expect.arrayContaining([expect.objectContaining({ path: '[2].type' })]),
    });

    expectProblem(await sendBatch(cloudEvent('ce-batch-object')), 400, 'body', 'array');
    expectProblem(
      await sendBatch(Array.from({ length: 101 }, (_, i) => cloudEvent(`ce-batch-many-${i}`))),
      400,
      'body',
      'at most 100',
    );
    expectProblem(
      await sendBatch([cloudEvent('ce-batch-key-long')], { 'idempotency-key': 'k'.repeat(195) }),
      400,
      'headers.idempotency-key',
      '194',
    );
    const empty = await sendBatch([]);
    expect(empty.statusCode, empty.body).toBe(202);
    expect(empty.json()).toEqual({ results: [] });
  });
});

describe('content types', () => {
  test('an unsupported content type is a 415 that lists the accepted types in the problem and in Accept-Post', async () => {
    const accepted = ['application/json', 'application/cloudevents+json', 'application/cloudevents-batch+json'];
    for (const [contentType, headers, says] of [
      ['text/plain', {}, 'text/plain is not accepted'],
      ['application/xml', {}, 'application/xml is not accepted'],
      ['application/vnd.acme+json', {}, 'application/vnd.acme+json is not accepted'],
      ['application/cloudevents+avro', {}, 'does not read'],
      ['text/plain', binaryHeaders('ce-415'), 'event data must be JSON'],
      ['application/octet-stream', binaryHeaders('ce-415'), 'event data must be JSON'],
    ] as const) {
      const response = await inject({
        method: 'POST',
        url: '/v1/events',
        payload: 'hello',
        headers: { 'content-type': contentType, ...headers },
      });
      const body = expectProblem(response, 415, 'header.content-type', says);
      expect(body.type).toBe('urn:activity-core:problem:unsupported-media-type');
      for (const type of accepted) expect(body.detail).toContain(type);
      expect(String(response.headers['accept-post']).split(', ')).toEqual(accepted);
    }
  });

  test('text/plain is refused by the other JSON routes too, with Accept-Post: application/json', async () => {
    const response = await inject({
      method: 'POST',
      url: '/v1/activities',
      payload: '{}',
      headers: { 'content-type': 'text/plain' },
    });
    expectProblem(response, 415, 'header.content-type', 'application/json');
    expect(response.headers['accept-post']).toBe('application/json');
  });

  test('the OpenAPI document lists every request content type of POST /v1/events and the binary-mode headers', async () => {
    const document = (await stack.api.server.inject({ method: 'GET', url: '/openapi.json' })).json();
    const post = document.paths['/v1/events'].post;
    expect(Object.keys(post.requestBody.content).sort()).toEqual([
      'application/cloudevents+json',
      'application/cloudevents-batch+json',
      'application/json',
    ]);
    expect(JSON.stringify(post.requestBody.content['application/cloudevents+json'].schema)).toContain('CloudEvent');
    expect(post.requestBody.content['application/cloudevents-batch+json'].schema.type).toBe('array');
    const headers = post.parameters
      .filter((parameter: { in: string }) => parameter.in === 'header')
      .map((parameter: { name: string }) => parameter.name);
    expect(headers).toEqual(
      expect.arrayContaining([
        'idempotency-key',
        'ce-specversion',
        'ce-id',
        'ce-source',
        'ce-type',
        'ce-time',
        'ce-subject',
      ]),
    );
    expect(Object.keys(post.responses)).toContain('415');
  });
});

describe('limits, credentials and rate limits apply as for JSON', () => {
  test('data over EVENT_DATA_LIMIT_BYTES is a 413 naming data in every mode; a body over BODY_LIMIT_BYTES is a 413 before anything is read', async () => {
    const before = await storedEvents();
    const big = { s: 'x'.repeat(DATA_LIMIT + 100) };
    expectProblem(await sendBinary(binaryHeaders('ce-big-binary'), big), 413, 'data', `${DATA_LIMIT} bytes`);
    expectProblem(await sendStructured(cloudEvent('ce-big-structured', big)), 413, 'data', 'EVENT_DATA_LIMIT_BYTES');
    expect((await sendBatch([cloudEvent('ce-big-batched', big)])).json().results).toEqual([
      expect.objectContaining({ ok: false, status: 413 }),
    ]);
    let deep: object = {};
    for (let i = 0; i < 40; i++) deep = { k: deep };
    expectProblem(await sendBinary(binaryHeaders('ce-deep-binary'), deep), 400, 'data', 'EVENT_DATA_MAX_DEPTH');
    for (const send of [
      (data: object) => sendBinary(binaryHeaders('ce-huge'), data),
      (data: object) => sendStructured(cloudEvent('ce-huge', data)),
      (data: object) => sendBatch([cloudEvent('ce-huge', data)]),
    ]) {
      const huge = await send({ s: 'x'.repeat(BODY_LIMIT) });
      expect(huge.statusCode, huge.body).toBe(413);
      expect(huge.json().type).toBe('urn:activity-core:problem:payload-too-large');
    }
    expect(await storedEvents()).toBe(before);
  });

  test('binary mode needs a key, records the credential, and a scoped ingest key may send only within its scope, naming the header', async () => {
    const unauthenticated = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/events',
      payload: JSON.stringify(DATA),
      headers: { 'content-type': 'application/json', ...binaryHeaders('ce-nokey') },
    });
    expect(unauthenticated.statusCode).toBe(401);

    const inScope = await sendBinary(binaryHeaders('ce-scoped-ok'), DATA, 'application/json', SCOPED_KEY);
    expect(inScope.statusCode, inScope.body).toBe(202);
    // The key is scoped to sources: its event is stored under its source and id together.
    const storedId = sourceScopedEventId('/shop', 'ce-scoped-ok');
    expect(inScope.json()).toEqual({ event_id: storedId, event_id_assigned: false, status: 'accepted' });
    const credential = await stack.sql.query('SELECT credential FROM events WHERE event_id = $1', [storedId]);
    expect(credential.rows).toEqual([{ credential: `ingest_key:${keyId(SCOPED_KEY)}` }]);

    const outside = await sendBinary(
      { ...binaryHeaders('ce-scoped-out'), 'ce-source': '/warehouse', 'ce-type': 'stock.moved' },
      DATA,
      'application/json',
      SCOPED_KEY,
    );
    const body = expectProblem(outside, 403, 'header.ce-source', '/shop*');
    expect(body.errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: 'header.ce-type', message: expect.stringContaining('ce.*') }),
      ]),
    );
    const structuredOutside = await inject({
      method: 'POST',
      url: '/v1/events',
      key: SCOPED_KEY,
      payload: JSON.stringify({ ...cloudEvent('ce-scoped-out'), source: '/warehouse' }),
      headers: { 'content-type': 'application/cloudevents+json' },
    });
    expectProblem(structuredOutside, 403, 'source');
  });

  test('every mode counts against the same per-key rate limit', async () => {
    const remaining = (response: Injected) => Number(response.headers['x-ratelimit-remaining']);
    const first = await sendBinary(binaryHeaders('ce-rate-1'));
    const second = await sendStructured(cloudEvent('ce-rate-2'));
    const third = await sendBatch([cloudEvent('ce-rate-3')]);
    const refused = await inject({
      method: 'POST',
      url: '/v1/events',
      payload: 'x',
      headers: { 'content-type': 'text/plain' },
    });
    expect([first, second, third].map((response) => response.statusCode)).toEqual([202, 202, 202]);
    expect(remaining(second)).toBe(remaining(first) - 1);
    expect(remaining(third)).toBe(remaining(first) - 2);
    expect(remaining(refused)).toBe(remaining(first) - 3);
  });
});
