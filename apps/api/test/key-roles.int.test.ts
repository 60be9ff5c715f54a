import { createHash, randomBytes } from 'node:crypto';
import { KEY_ROLES, type KeyRole } from '@activity-core/config';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startStack, waitFor, type TestStack } from '../../../test/harness';

const KEYS: Record<KeyRole, string> = {
  read: 'roles-read-key-0123456789abcdefghijkl',
  operate: 'roles-operate-key-0123456789abcdefghij',
  write: 'roles-write-key-0123456789abcdefghijkl',
  admin: 'roles-admin-key-without-entry-0123456789',
};
const BILLING_WRITE = 'roles-billing-write-key-0123456789abcdef';
const BILLING_OPERATE = 'roles-billing-operate-key-0123456789abcd';
const INGEST_KEY = 'roles-ingest-key-0123456789abcdefghijk';
const idOf = (key: string) => createHash('sha256').update(key).digest('hex').slice(0, 12);

let stack: TestStack;

beforeAll(async () => {
  stack = await startStack({
    env: {
      API_KEYS: [...Object.values(KEYS), BILLING_WRITE, BILLING_OPERATE].join(','),
      INGEST_KEYS: INGEST_KEY,
      API_KEY_ROLES: JSON.stringify({
        [idOf(KEYS.read)]: { role: 'read' },
        [idOf(KEYS.operate)]: { role: 'operate' },
        [idOf(KEYS.write)]: { role: 'write' },
        [idOf(BILLING_WRITE)]: { role: 'write', activity_prefixes: ['billing.'] },
        [idOf(BILLING_OPERATE)]: { role: 'operate', activity_prefixes: ['billing.', 'tax.'] },
      }),
      RATE_LIMIT_MAX: '0',
      AUTH_FAILURE_LIMIT: '0',
      // Encrypted payloads, so the codec endpoint exists and is probed with the rest.
      PAYLOAD_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}`,
    },
  });
});
afterAll(async () => {
  await stack?.close();
});

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';
const call = (key: string, method: Method, url: string, payload?: unknown) =>
  stack.api.server.inject({
    method,
    url,
    headers: { authorization: `Bearer ${key}` },
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

/** A concrete URL for a route pattern: every `:param` gets a value of the right shape. */
function concrete(url: string): string {
  return url.replace(/:([A-Za-z_]+)/g, (_, name: string) =>
    /^(id|run_id|activity_id)$/.test(name)
      ? '0b6f2b5e-1d5a-4a56-9b0a-6f7d2f0e9c11'
      : name === 'scheduled_for'
        ? '2026-03-01T09:00:00Z'
        : 'x',
  );
}

const definition = (name: string, eventType: string) => ({
  name,
  triggers: [{ type: 'event', event_type: eventType }],
  tasks: [{ type: 'noop' }],
});

describe('roles against every route', () => {
  test('every key-protected route declares the least role it needs', () => {
    const keyed = stack.api.server.routeScopes.filter((r) => r.scope === 'management' || r.scope === 'ingest');
    expect(keyed.length).toBeGreaterThanOrEqual(30);
    expect(keyed.filter((route) => !KEY_ROLES.includes(route.role!))).toEqual([]);
  });

  test('each role is refused with 403 exactly on the routes that need a higher one, naming the role needed', async () => {
    // Generated from the server's routes: a route added later is probed without touching this test.
    const keyed = stack.api.server.routeScopes.filter(
      (r) => (r.scope === 'management' || r.scope === 'ingest') && r.method !== 'HEAD',
    );
    const wrong: string[] = [];
    for (const route of keyed) {
      for (const role of KEY_ROLES) {
        const method = route.method as Method;
        const response = await call(KEYS[role], method, concrete(route.url), method === 'GET' ? undefined : {});
        const allowed = KEY_ROLES.indexOf(role) >= KEY_ROLES.indexOf(route.role!);
        const what = `${role} on ${route.method} ${route.url} (needs ${route.role}): ${response.statusCode}`;
        if (allowed && (response.statusCode === 403 || response.statusCode === 401)) wrong.push(what);
        if (!allowed) {
          if (response.statusCode !== 403) wrong.push(what);
          else {
            expect(response.headers['content-type'], what).toContain('application/problem+json');
            expect(response.json().detail, what).toContain(`needs ${route.role} or above`);
            expect(response.json().errors, what).toEqual([
              { path: 'authorization', message: `needs a key with role ${route.role} or above` },
            ]);
          }
        }
      }
    }
    console.info(`[roles] ${keyed.length} routes probed with ${KEY_ROLES.length} roles each`);
    expect(wrong).toEqual([]);
  });

  test('decrypting payloads through the codec endpoint needs operate: a read key is refused', async () => {
    const paths = stack.api.server.routeScopes.map((route) => `${route.method} ${route.url}`);
    expect(paths).toEqual(expect.arrayContaining(['POST /codec/decode', 'POST /codec/encode']));
    const decode = (key: string) => call(key, 'POST', '/codec/decode', { payloads: [] });
    expect((await decode(KEYS.read)).statusCode).toBe(403);
    expect((await decode(KEYS.operate)).statusCode).toBe(200);
    expect((await decode(BILLING_OPERATE)).statusCode).toBe(200);
  });

  test('a key without an entry is admin, and ingest keys are not subject to roles', async () => {
    expect((await call(KEYS.admin, 'POST', '/v1/schedules/reconcile')).statusCode).toBe(200);
    const event = {
      event_id: 'roles-ingest-1',
      event_type: 'roles.none',
      source: 'tests',
      occurred_at: '2026-03-01T09:00:00Z',
      data: {},
    };
    expect((await call(INGEST_KEY, 'POST', '/v1/events', event)).statusCode).toBe(202);
    expect((await call(KEYS.read, 'POST', '/v1/events', { ...event, event_id: 'roles-ingest-2' })).statusCode).toBe(
      403,
    );
    expect((await call(KEYS.operate, 'POST', '/v1/events', { ...event, event_id: 'roles-ingest-3' })).statusCode).toBe(
      202,
    );
  });
});

describe('activities owned by name prefix', () => {
  let billing: string;
  let shop: string;

  beforeAll(async () => {
    const owned = await call(BILLING_WRITE, 'POST', '/v1/activities', definition('billing.invoices', 'invoice.due'));
    expect(owned.statusCode, owned.body).toBe(201);
    billing = owned.json().id;
    const other = await call(KEYS.admin, 'POST', '/v1/activities', definition('shop.orders', 'order.paid'));
    expect(other.statusCode, other.body).toBe(201);
    shop = other.json().id;
  });

  test('a prefix-owning key creates, changes, switches and deletes only the activities it owns', async () => {
    const refusedCreate = await call(BILLING_WRITE, 'POST', '/v1/activities', definition('shop.refunds', 'refund'));
    expect(refusedCreate.statusCode).toBe(403);
    expect(refusedCreate.json().detail).toContain('owns only activities whose names start with billing.');
    expect(refusedCreate.json().errors).toEqual([
      { path: 'name', message: 'must be an activity whose name starts with billing.' },
    ]);

    const refusedPut = await call(BILLING_WRITE, 'PUT', `/v1/activities/${shop}`, definition('billing.steal', 'x'));
    expect(refusedPut.statusCode).toBe(403);
    expect(refusedPut.json().errors[0].path).toBe('id');
    // Renaming an owned activity out of the prefix would give it away.
    const renamed = await call(BILLING_WRITE, 'PUT', `/v1/activities/${billing}`, definition('shop.moved', 'x'));
    expect(renamed.statusCode).toBe(403);
    expect(renamed.json().errors[0].path).toBe('name');
    for (const action of ['disable', 'enable'])
      expect((await call(BILLING_WRITE, 'POST', `/v1/activities/${shop}/${action}`)).statusCode).toBe(403);
    expect((await call(BILLING_WRITE, 'DELETE', `/v1/activities/${shop}`)).statusCode).toBe(403);
    expect((await call(KEYS.admin, 'GET', `/v1/activities/${shop}`)).json().enabled).toBe(true);

    const changed = await call(
      BILLING_WRITE,
      'PUT',
      `/v1/activities/${billing}`,
      definition('billing.invoices', 'invoice.overdue'),
    );
    expect(changed.statusCode, changed.body).toBe(200);
    for (const action of ['disable', 'enable'])
      expect((await call(BILLING_WRITE, 'POST', `/v1/activities/${billing}/${action}`)).statusCode).toBe(200);
    const created = await call(BILLING_WRITE, 'POST', '/v1/activities', definition('billing.refunds', 'refund'));
    expect(created.statusCode).toBe(201);
    expect((await call(BILLING_WRITE, 'DELETE', `/v1/activities/${created.json().id}`)).statusCode).toBe(204);
    // Back to the trigger the run tests use.
    await call(BILLING_WRITE, 'PUT', `/v1/activities/${billing}`, definition('billing.invoices', 'invoice.due'));
  });

  test("a prefix-owning key reads every team's activities, versions, runs and the audit log", async () => {
    for (const url of [
      `/v1/activities/${shop}`,
      '/v1/activities',
      `/v1/activities/${shop}/versions`,
      `/v1/runs?activity_id=${shop}`,
      '/v1/audit',
      '/v1/webhook-sources',
    ]) {
      expect((await call(BILLING_WRITE, 'GET', url)).statusCode, url).toBe(200);
    }
  });

  test('run operations: re-run and cancel the owned activity’s runs, 403 on another’s; a bulk re-run must name an owned activity', async () => {
    const send = (eventId: string, eventType: string) =>
      call(KEYS.admin, 'POST', '/v1/events', {
        event_id: eventId,
        event_type: eventType,
        source: 'tests',
        occurred_at: '2026-03-01T09:00:00Z',
        data: {},
      });
    expect((await send('roles-billing-1', 'invoice.due')).statusCode).toBe(202);
    expect((await send('roles-shop-1', 'order.paid')).statusCode).toBe(202);
    const runOf = (activity: string) =>
      waitFor(`a finished run of ${activity}`, async () => {
        const items = (await call(KEYS.read, 'GET', `/v1/runs?activity_id=${activity}`)).json().items as Array<{
          run_id: string;
          status: string;
        }>;
        return items.find((run) => run.status === 'succeeded')?.run_id;
      });
    const [ownRun, otherRun] = await Promise.all([runOf(billing), runOf(shop)]);

    const refusedCancel = await call(BILLING_OPERATE, 'POST', `/v1/runs/${otherRun}/cancel`);
    expect(refusedCancel.statusCode).toBe(403);
    expect(refusedCancel.json().errors).toEqual([
      { path: 'run_id', message: 'must be an activity whose name starts with billing., tax.' },
    ]);
    expect((await call(BILLING_OPERATE, 'POST', `/v1/runs/${otherRun}/rerun`)).statusCode).toBe(403);
    expect((await call(BILLING_OPERATE, 'POST', `/v1/runs/${ownRun}/cancel`)).statusCode).toBe(202);
    const rerun = await call(BILLING_OPERATE, 'POST', `/v1/runs/${ownRun}/rerun`);
    expect(rerun.statusCode, rerun.body).toBe(202);

    const now = Date.now();
    const window = {
      status: 'succeeded',
      from: new Date(now - 86_400_000).toISOString(),
      to: new Date(now).toISOString(),
    };
    const unnamed = await call(BILLING_OPERATE, 'POST', '/v1/runs/rerun', { filter: window, dry_run: true });
    expect(unnamed.statusCode).toBe(403);
    expect(unnamed.json().errors[0].path).toBe('filter.activity_id');
    const other = await call(BILLING_OPERATE, 'POST', '/v1/runs/rerun', {
      filter: { ...window, activity_id: shop },
      dry_run: true,
    });
    expect(other.statusCode).toBe(403);
    const own = await call(BILLING_OPERATE, 'POST', '/v1/runs/rerun', {
      filter: { ...window, activity_id: billing },
      dry_run: true,
    });
    expect(own.statusCode, own.body).toBe(200);

    expect((await call(BILLING_OPERATE, 'POST', `/v1/activities/${shop}/schedules/pause`)).statusCode).toBe(403);
    expect((await call(BILLING_OPERATE, 'POST', `/v1/activities/${billing}/schedules/pause`)).statusCode).not.toBe(403);
  });

  test('what every team shares (webhook sources, the schedule reconcile) needs a key without prefixes', async () => {
    const source = {
      name: 'roles-hook',
      scheme: 'github',
      secret: 'roles-webhook-secret-0123456789abcdef',
      event_type_from_unsigned_header: true,
      allow_replay_without_timestamp: true,
    };
    const refused = await call(BILLING_WRITE, 'POST', '/v1/webhook-sources', source);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().detail).toContain('needs a key without activity_prefixes');
    expect((await call(BILLING_OPERATE, 'POST', '/v1/schedules/reconcile')).statusCode).toBe(403);
    const created = await call(KEYS.write, 'POST', '/v1/webhook-sources', source);
    expect(created.statusCode, created.body).toBe(201);
  });
});
