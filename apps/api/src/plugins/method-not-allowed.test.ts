import Fastify from 'fastify';
import { describe, expect, test } from 'vitest';
import { registerMethodNotAllowed, routePathMatcher } from './method-not-allowed';

async function server() {
  const app = Fastify({ logger: false });
  registerMethodNotAllowed(app);
  app.get('/v1/runs', async () => ({ items: [] }));
  app.get('/v1/runs/:run_id', async () => ({}));
  app.post('/v1/runs/:run_id/cancel', async () => ({}));
  app.delete('/v1/runs/:run_id', async () => ({}));
  app.post('/v1/runs/rerun', async () => ({ rerun: true }));
  await app.ready();
  return app;
}

describe('methods a path does not take', () => {
  test('are answered 405 problem+json with Allow listing the methods the path takes', async () => {
    const app = await server();
    const response = await app.inject({ method: 'PUT', url: '/v1/runs/4d0f6e1c?x=1' });
    expect(response.statusCode).toBe(405);
    expect(response.headers.allow).toBe('DELETE, GET, HEAD');
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json()).toMatchObject({ type: 'urn:activity-core:problem:method-not-allowed', status: 405 });
    await app.close();
  });

  test('a method fastify parses a body for (QUERY) is a 405 too, before any body rule', async () => {
    const app = await server();
    const response = await app.inject({ method: 'QUERY', url: '/v1/runs' });
    expect(response.statusCode).toBe(405);
    expect(response.headers.allow).toBe('GET, HEAD');
    await app.close();
  });

  test('a concrete path is its own resource: a method it does not take is a 405, not a call of the templated route beside it', async () => {
    const app = await server();
    const response = await app.inject({ method: 'GET', url: '/v1/runs/rerun' });
    expect(response.statusCode).toBe(405);
    expect(response.headers.allow).toBe('POST');
    expect((await app.inject({ method: 'POST', url: '/v1/runs/rerun' })).json()).toEqual({ rerun: true });
    expect((await app.inject({ method: 'GET', url: '/v1/runs/4d0f6e1c' })).statusCode).toBe(200);
    await app.close();
  });

  test('a path no route has is still a 404, and a method the path takes is answered by its route', async () => {
    const app = await server();
    expect((await app.inject({ method: 'TRACE', url: '/v1/nothing' })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/v1/runs' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'HEAD', url: '/v1/runs' })).statusCode).toBe(200);
    await app.close();
  });
});

describe('routePathMatcher', () => {
  test('matches one segment per parameter, anything for a wildcard, and nothing else', () => {
    expect(routePathMatcher('/v1/runs/:run_id').test('/v1/runs/abc')).toBe(true);
    expect(routePathMatcher('/v1/runs/:run_id').test('/v1/runs/abc/cancel')).toBe(false);
    expect(routePathMatcher('/v1/runs/:run_id').test('/v1/runs/')).toBe(false);
    expect(routePathMatcher('/docs/*').test('/docs/static/index.html')).toBe(true);
    expect(routePathMatcher('/a.b').test('/axb')).toBe(false);
  });
});
