import { createHash } from 'node:crypto';
import { eventRunWorkflowId, sourceScopedEventId } from '@activity-core/contracts';
import { signHmac } from '@activity-core/webhooks';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startStack, type TestStack } from './harness';

const API_KEY = 'credentials-management-key-0123456789';
const OPEN_KEY = 'credentials-open-ingest-key-0123456789';
const SCOPED_KEY = 'credentials-scoped-ingest-key-0123456789';
const CRM_KEY = 'credentials-crm-ingest-key-0123456789abc';
const idOf = (key: string) => createHash('sha256').update(key).digest('hex').slice(0, 12);

const HOOK = {
  name: 'gh-custom',
  scheme: 'hmac_sha256',
  secret: 'credentials-webhook-secret-0123456789',
  event_source: 'github-prod',
  timestamp_header: 'X-Timestamp',
  signature_header: 'X-Signature',
  signature_prefix: '',
} as const;

let stack: TestStack;

beforeAll(async () => {
  stack = await startStack({
    worker: false,
    env: {
      API_KEYS: API_KEY,
      INGEST_KEYS: `${OPEN_KEY},${SCOPED_KEY},${CRM_KEY}`,
      INGEST_KEY_SCOPES: JSON.stringify({
        [idOf(SCOPED_KEY)]: { sources: ['shop:*'], event_types: ['order.*'] },
        [idOf(CRM_KEY)]: { sources: ['crm'] },
      }),
    },
  });
});
afterAll(async () => {
  await stack?.close();
});

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const event = (event_id: string, fields: object = {}) => ({
  event_id,
  event_type: 'push',
  source: 'tests',
  occurred_at: '2026-03-01T09:00:00Z',
  data: {},
  ...fields,
});
const post = (key: string, payload: object) =>
  stack.api.server.inject({ method: 'POST', url: '/v1/events', payload, headers: bearer(key) });
const stored = async (eventId: string) =>
  (await stack.sql.query('SELECT credential, hops, source FROM events WHERE event_id = $1', [eventId])).rows[0];

describe('who may send which events', () => {
  test('an ingest key cannot pose as a verified webhook or as the service, alone or in a batch', async () => {
    const trigger = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      headers: bearer(API_KEY),
      payload: {
        name: 'only-signed-pushes',
        triggers: [{ type: 'event', event_type: 'push', source: 'webhook:github' }],
        tasks: [{ type: 'noop' }],
      },
    });
    expect(trigger.statusCode, trigger.body).toBe(201);

    for (const [eventId, source, reason] of [
      ['pose-webhook', 'webhook:github', 'verified webhook'],
      ['pose-service', 'activity-core', 'emits itself'],
      ['pose-service-ns', 'activity-core:billing', 'emits itself'],
    ] as const) {
      for (const key of [OPEN_KEY, API_KEY]) {
        const refused = await post(key, event(eventId, { source }));
        expect(refused.statusCode, refused.body).toBe(400);
        expect(refused.headers['content-type']).toContain('application/problem+json');
        expect(refused.json().errors).toEqual([
          expect.objectContaining({ path: 'source', message: expect.stringContaining(reason) }),
        ]);
      }
    }
    const batch = await post(OPEN_KEY, [event('pose-batch', { source: 'webhook:github' }), event('honest-batch')]);
    expect(batch.statusCode, batch.body).toBe(202);
    expect(batch.json().results[0]).toMatchObject({
      ok: false,
      status: 400,
      errors: [expect.objectContaining({ path: '[0].source' })],
    });
    expect(batch.json().results[1]).toMatchObject({ ok: true, event_id: 'honest-batch' });

    const posed = await stack.sql.query(
      "SELECT event_id FROM events WHERE source LIKE 'webhook:%' OR source LIKE 'activity-core%'",
    );
    expect(posed.rows).toEqual([]);
    const routes = await stack.sql.query('SELECT count(*)::int AS n FROM event_routes');
    expect(routes.rows[0].n).toBe(0);
  });

  test('a webhook source custom event_source is reserved, and its verified deliveries record the webhook as credential', async () => {
    const created = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/webhook-sources',
      headers: bearer(API_KEY),
      payload: HOOK,
    });
    expect(created.statusCode, created.body).toBe(201);

    const refused = await post(OPEN_KEY, event('pose-custom', { source: 'github-prod' }));
    expect(refused.statusCode, refused.body).toBe(400);
    expect(refused.json().errors).toEqual([
      expect.objectContaining({ path: 'source', message: expect.stringContaining('gh-custom') }),
    ]);

    const body = JSON.stringify({ id: 'signed-delivery-1', type: 'push' });
    const delivered = await stack.api.server.inject({
      method: 'POST',
      url: `/v1/webhooks/${HOOK.name}`,
      payload: body,
      headers: { 'content-type': 'application/json', ...signHmac(HOOK, body) },
    });
    expect(delivered.statusCode, delivered.body).toBe(202);
    const eventId = delivered.json().event_id as string;
    const shown = await stack.api.server.inject({
      method: 'GET',
      url: `/v1/events/${encodeURIComponent(eventId)}`,
      headers: bearer(API_KEY),
    });
    expect(shown.json()).toMatchObject({
      credential: 'webhook:gh-custom',
      hops: 0,
      envelope: { source: 'github-prod' },
    });
  });

  test('a scoped ingest key may send only within its scope, and every event records the key by id, never the key', async () => {
    const outside = await post(SCOPED_KEY, event('scoped-outside', { source: 'crm', event_type: 'user.created' }));
    expect(outside.statusCode, outside.body).toBe(403);
    expect(outside.headers['content-type']).toContain('application/problem+json');
    expect(outside.json().type).toBe('urn:activity-core:problem:forbidden');
    expect(outside.json().errors).toEqual([
      { path: 'source', message: expect.stringContaining('"shop:*"') },
      { path: 'event_type', message: expect.stringContaining('"order.*"') },
    ]);
    expect(await stored('scoped-outside')).toBeUndefined();

    const typeOnly = await post(SCOPED_KEY, event('scoped-type', { source: 'shop:eu', event_type: 'user.created' }));
    expect(typeOnly.statusCode).toBe(403);
    expect(typeOnly.json().errors).toEqual([expect.objectContaining({ path: 'event_type' })]);

    const inside = await post(SCOPED_KEY, event('scoped-inside', { source: 'shop:eu', event_type: 'order.paid' }));
    expect(inside.statusCode, inside.body).toBe(202);
    const batch = await post(SCOPED_KEY, [
      event('scoped-batch-ok', { source: 'shop:us', event_type: 'order.paid' }),
      event('scoped-batch-out', { source: 'crm', event_type: 'order.paid' }),
    ]);
    expect(
      batch.json().results.map((result: { ok: boolean; status?: number }) => (result.ok ? 202 : result.status)),
    ).toEqual([202, 403]);

    const open = await post(OPEN_KEY, event('open-anything', { source: 'crm', event_type: 'user.created' }));
    expect(open.statusCode, open.body).toBe(202);
    const admin = await post(API_KEY, event('admin-anything', { source: 'crm', event_type: 'user.created' }));
    expect(admin.statusCode, admin.body).toBe(202);

    // A source-scoped key's events are stored under their source and id together.
    const insideId = sourceScopedEventId('shop:eu', 'scoped-inside');
    expect(inside.json()).toEqual({ event_id: insideId, event_id_assigned: false, status: 'accepted' });
    expect(await stored(insideId)).toEqual({
      credential: `ingest_key:${idOf(SCOPED_KEY)}`,
      hops: 0,
      source: 'shop:eu',
    });
    expect((await stored('open-anything')).credential).toBe(`ingest_key:${idOf(OPEN_KEY)}`);
    expect((await stored('admin-anything')).credential).toBe(`api_key:${idOf(API_KEY)}`);
    const shown = await stack.api.server.inject({
      method: 'GET',
      url: `/v1/events/${encodeURIComponent(insideId)}`,
      headers: bearer(API_KEY),
    });
    expect(shown.json().credential).toBe(`ingest_key:${idOf(SCOPED_KEY)}`);
    const all = await stack.sql.query("SELECT string_agg(coalesce(credential, ''), ',') AS credentials FROM events");
    for (const key of [API_KEY, OPEN_KEY, SCOPED_KEY]) expect(all.rows[0].credentials).not.toContain(key);
  });

  test('two producers may use the same event id: each is its own event, each retry its own duplicate, and neither learns of the other', async () => {
    const activity = await stack.api.server.inject({
      method: 'POST',
      url: '/v1/activities',
      headers: bearer(API_KEY),
      payload: { name: 'any-order', triggers: [{ type: 'event', event_type: 'order.*' }], tasks: [{ type: 'noop' }] },
    });
    expect(activity.statusCode, activity.body).toBe(201);
    const activityId: string = activity.json().id;
    // The shop key takes id X first; the CRM later sends its own X.
    const shop = await post(SCOPED_KEY, event('X-1', { source: 'shop:eu', event_type: 'order.paid', data: { a: 1 } }));
    const crm = await post(CRM_KEY, event('X-1', { source: 'crm', event_type: 'order.paid', data: { b: 2 } }));
    expect(shop.statusCode, shop.body).toBe(202);
    expect(crm.statusCode, crm.body).toBe(202);
    const shopId = sourceScopedEventId('shop:eu', 'X-1');
    const crmId = sourceScopedEventId('crm', 'X-1');
    expect(shop.json()).toEqual({ event_id: shopId, event_id_assigned: false, status: 'accepted' });
    expect(crm.json()).toEqual({ event_id: crmId, event_id_assigned: false, status: 'accepted' });
    expect(await stored(shopId)).toMatchObject({ source: 'shop:eu' });
    expect(await stored(crmId)).toMatchObject({ source: 'crm' });
    // Each started its own run, under the documented id.
    const runs = await stack.sql.query(
      'SELECT workflow_id FROM event_routes WHERE activity_id = $1 ORDER BY workflow_id',
      [activityId],
    );
    expect(runs.rows.map((row: { workflow_id: string }) => row.workflow_id)).toEqual(
      [eventRunWorkflowId(activityId, crmId), eventRunWorkflowId(activityId, shopId)].sort(),
    );
    // A retry is a duplicate of the sender's own event; the other producer's content is never compared with it.
    const again = await post(CRM_KEY, event('X-1', { source: 'crm', event_type: 'order.paid', data: { b: 2 } }));
    expect(again.json()).toEqual({ event_id: crmId, event_id_assigned: false, status: 'duplicate' });
    // Reusing an id for other content is refused in the sender's terms, naming the id it sent.
    const reused = await post(CRM_KEY, event('X-1', { source: 'crm', event_type: 'order.paid', data: { b: 3 } }));
    expect(reused.statusCode).toBe(422);
    expect(reused.json().detail).toContain('event_id X-1 ');
    // An unscoped producer keeps the one global space: its X-1 is a third event, stored as sent.
    const open = await post(OPEN_KEY, event('X-1', { source: 'erp', event_type: 'order.paid' }));
    expect(open.json()).toEqual({ event_id: 'X-1', event_id_assigned: false, status: 'accepted' });
  });

  test('nobody may post an id in the source-scoped form: it is given by the service, never chosen', async () => {
    for (const key of [API_KEY, OPEN_KEY, SCOPED_KEY]) {
      const posted = await post(key, event('src:crm:X-2', { source: 'shop:eu', event_type: 'order.paid' }));
      expect(posted.statusCode, posted.body).toBe(400);
      expect(posted.json().errors).toEqual([
        { path: 'event_id', message: expect.stringContaining('reserved for the events of source-scoped ingest keys') },
      ]);
    }
    expect(await stored('src:crm:X-2')).toBeUndefined();
  });
});
