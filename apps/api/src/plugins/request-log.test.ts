import { describe, expect, test } from 'vitest';
import { createApiMetrics } from '../metrics';
import { buildServer, type ServerDeps } from '../server';

/** The real server (routes and plugins), with services that these requests never reach, logging into an array. */
async function serverLoggingTo(lines: Record<string, unknown>[]) {
  const deps = {
    probes: [],
    metrics: createApiMetrics({ pool: { query: async () => ({ rows: [] }) } }),
  } as unknown as ServerDeps;
  return await buildServer(deps, {
    auth: { apiKeys: [], ingestKeys: [] },
    bodyLimitBytes: 1024 * 1024,
    rateLimit: { max: 0, windowMs: 60_000 },
    logger: {
      level: 'info',
      stream: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
    },
  });
}

describe('request logging', () => {
  test('a request is one info line naming method, route, path, status, duration and the request id', async () => {
    const lines: Record<string, unknown>[] = [];
    const server = await serverLoggingTo(lines);
    try {
      const response = await server.inject({
        method: 'GET',
        url: '/healthz?verbose=1',
        headers: { 'x-request-id': 'req-123' },
      });
      expect(response.statusCode).toBe(200);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({
        level: 30,
        msg: 'request',
        method: 'GET',
        route: '/healthz',
        url: '/healthz?verbose=1',
        status: 200,
        reqId: 'req-123',
      });
      expect(typeof lines[0]?.durationMs).toBe('number');
    } finally {
      await server.close();
    }
  });

  test('an unknown route is one line too, with the status and no route template', async () => {
    const lines: Record<string, unknown>[] = [];
    const server = await serverLoggingTo(lines);
    try {
      const response = await server.inject({ method: 'POST', url: '/nowhere' });
      expect(response.statusCode).toBe(404);
      expect(lines).toEqual([
        expect.objectContaining({ msg: 'request', method: 'POST', route: 'unmatched', url: '/nowhere', status: 404 }),
      ]);
    } finally {
      await server.close();
    }
  });
});
