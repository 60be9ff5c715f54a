import Fastify from 'fastify';
import { describe, expect, test } from 'vitest';
import type { AuditService } from '../services/audit-service';
import { auditOutcome, registerAudit } from './audit';

type Recorded = Parameters<AuditService['record']>[0];

/** A server with one audited route answering `status`, recording through `record`, logging into `lines`. */
async function auditedServer(record: (entry: Recorded) => Promise<void>, lines: Array<Record<string, unknown>>) {
  const app = Fastify({
    requestIdHeader: 'x-request-id',
    logger: { level: 'error', stream: { write: (line: string) => void lines.push(JSON.parse(line)) } },
  });
  registerAudit(app, {
    audit: { record, list: async () => ({ items: [], next_cursor: null }) } as AuditService,
    lookup: { activityName: async () => undefined, runActivity: async () => undefined },
    waitMs: 50,
  });
  app.post(
    '/v1/activities/:id/disable',
    { config: { audit: { action: 'activity.disable', target: 'activity' } } },
    async (request) => ({ id: (request.params as { id: string }).id }),
  );
  app.get('/v1/activities/:id', async () => ({}));
  await app.ready();
  return app;
}

const ID = '0b6f2b5e-1d5a-4a56-9b0a-6f7d2f0e9c11';

describe('audit records', () => {
  test('an audited answer is recorded before it is sent, with anonymous as the actor while authentication is off', async () => {
    const recorded: Recorded[] = [];
    const app = await auditedServer(async (entry) => void recorded.push(entry), []);
    const response = await app.inject({
      method: 'POST',
      url: `/v1/activities/${ID}/disable`,
      headers: { 'x-request-id': 'r-1' },
    });
    expect(response.statusCode).toBe(200);
    expect(recorded).toEqual([
      {
        actor: 'anonymous',
        action: 'activity.disable',
        targetType: 'activity',
        targetId: ID,
        activityId: ID,
        outcome: 'succeeded',
        status: 200,
        requestId: 'r-1',
      },
    ]);
    await app.inject({ method: 'GET', url: `/v1/activities/${ID}` });
    expect(recorded).toHaveLength(1);
    await app.close();
  });

  test('a write that does not finish holds the answer back only briefly, and a failed one is logged with its whole entry', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const hanging = await auditedServer(() => new Promise(() => undefined), lines);
    const started = Date.now();
    expect((await hanging.inject({ method: 'POST', url: `/v1/activities/${ID}/disable` })).statusCode).toBe(200);
    expect(Date.now() - started).toBeLessThan(1_000);
    await hanging.close();

    const failing = await auditedServer(() => Promise.reject(new Error('connection terminated')), lines);
    expect((await failing.inject({ method: 'POST', url: `/v1/activities/${ID}/disable` })).statusCode).toBe(200);
    expect(lines).toEqual([
      expect.objectContaining({
        msg: 'the audit record of this request could not be written',
        audit: expect.objectContaining({ action: 'activity.disable', targetId: ID, outcome: 'succeeded' }),
      }),
    ]);
    await failing.close();
  });

  test('outcomes: 2xx succeeded, 4xx refused, 5xx failed', () => {
    expect([201, 204, 400, 403, 404, 409, 500, 503].map(auditOutcome)).toEqual([
      'succeeded',
      'succeeded',
      'refused',
      'refused',
      'refused',
      'refused',
      'failed',
      'failed',
    ]);
  });
});
