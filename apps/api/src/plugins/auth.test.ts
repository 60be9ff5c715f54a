import Fastify from 'fastify';
import { describe, expect, test } from 'vitest';
import { ownsActivity, registerAuth, roleAllows } from './auth';

describe('roles', () => {
  test('each role includes the ones below it and none above', () => {
    expect(roleAllows('admin', 'write')).toBe(true);
    expect(roleAllows('write', 'operate')).toBe(true);
    expect(roleAllows('operate', 'read')).toBe(true);
    expect(roleAllows('operate', 'write')).toBe(false);
    expect(roleAllows('read', 'operate')).toBe(false);
    expect(roleAllows('write', 'admin')).toBe(false);
  });

  test('a key owns the activities whose names start with one of its prefixes, and every activity without prefixes', () => {
    expect(ownsActivity(['billing.', 'tax.'], 'billing.invoices')).toBe(true);
    expect(ownsActivity(['billing.', 'tax.'], 'tax.vat')).toBe(true);
    expect(ownsActivity(['billing.'], 'billing')).toBe(false);
    expect(ownsActivity(['billing.'], 'shop.billing.x')).toBe(false);
    expect(ownsActivity(undefined, 'anything')).toBe(true);
  });

  test('a keyed route that declares no role is refused when it is registered, so none ships open to every role', async () => {
    const app = Fastify();
    registerAuth(app, { apiKeys: ['a-management-key-of-at-least-32-characters'], ingestKeys: [] });
    expect(() => app.get('/v1/unroled', { config: { auth: 'management' } }, async () => ({}))).toThrow(
      'route GET /v1/unroled declares no role',
    );
    app.get('/v1/roled', { config: { auth: 'management', role: 'read' } }, async () => ({}));
    await app.ready();
    expect(app.routeScopes).toContainEqual({ method: 'GET', url: '/v1/roled', scope: 'management', role: 'read' });
    expect(app.routeScopes.map((route) => route.url)).not.toContain('/v1/unroled');
    await app.close();
  });
});
