import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runMigrations } from '@activity-core/db';
import { freePort, startEmbeddedPostgres, type RunningPostgres } from '@activity-core/dev-services';
import { signHmac } from '@activity-core/webhooks';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApiApp, type ApiApp } from '../apps/api/src/app';
import { testConfig, waitFor } from './harness';

/**
 * Postgres goes away. This file runs its own Postgres (persistent, so it
 * comes back with its data) and leaves the shared one alone.
 */
let scratch: string;
let postgres: RunningPostgres;
let port: number;
let api: ApiApp;
let url: string;

const startPostgres = () => startEmbeddedPostgres({ dataDir: join(scratch, 'pg'), port, persistent: true });

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'activity-core-pg-outage-'));
  const { chmod } = await import('node:fs/promises');
  await chmod(scratch, 0o755);
  port = await freePort();
  postgres = await startPostgres();
  const admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
  await admin.query('CREATE DATABASE ingress');
  await admin.end();
  url = postgres.urlFor('ingress');
  await runMigrations(url);
  api = await createApiApp(testConfig(url), {
    logger: process.env.TEST_LOG ? { level: process.env.TEST_LOG } : false,
    dispatcherIntervalMs: 200,
  });
});

afterAll(async () => {
  await api?.close();
  await postgres?.stop();
  await rm(scratch, { recursive: true, force: true });
});

const event = (id: string) => ({
  event_id: id,
  event_type: 'pg.outage',
  source: 'tests',
  occurred_at: '2026-03-01T09:00:00Z',
  data: { id },
});
const HMAC_SOURCE = {
  name: 'pg-outage-hook',
  scheme: 'hmac_sha256',
  secret: 'pg-outage-secret-0123456789',
  allow_replay_without_timestamp: true,
} as const;

async function storedEventIds(): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query('SELECT event_id FROM events ORDER BY event_id')).rows.map((row) => row.event_id);
  } finally {
    await client.end();
  }
}

function expectUnavailable(response: { statusCode: number; headers: Record<string, unknown>; json(): any }): void {
  expect(response.statusCode, JSON.stringify(response.json())).toBe(503);
  expect(response.headers['content-type']).toContain('application/problem+json');
  expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
  expect(response.json().type).toBe('urn:activity-core:problem:unavailable');
}

describe('Postgres down', () => {
  test('ingress answers 503 with Retry-After and acknowledges nothing it could not store', async () => {
    const inject = api.server.inject.bind(api.server);
    expect(
      (
        await inject({
          method: 'POST',
          url: '/v1/activities',
          payload: {
            name: 'pg-outage',
            triggers: [{ type: 'event', event_type: 'pg.outage' }],
            tasks: [{ type: 'noop' }],
          },
        })
      ).statusCode,
    ).toBe(201);
    expect((await inject({ method: 'POST', url: '/v1/webhook-sources', payload: HMAC_SOURCE })).statusCode).toBe(201);
    expect((await inject({ method: 'POST', url: '/v1/events', payload: event('before') })).statusCode).toBe(202);

    await postgres.stop();

    expectUnavailable(await inject({ method: 'POST', url: '/v1/events', payload: event('during-single') }));
    expectUnavailable(
      await inject({ method: 'POST', url: '/v1/events', payload: [event('during-batch-1'), event('during-batch-2')] }),
    );
    const body = JSON.stringify({ id: 'during-webhook', type: 'pg.outage' });
    expectUnavailable(
      await inject({
        method: 'POST',
        url: `/v1/webhooks/${HMAC_SOURCE.name}`,
        payload: body,
        headers: {
          'content-type': 'application/json',
          ...signHmac({ ...HMAC_SOURCE, signature_header: 'X-Signature', signature_prefix: '' }, body),
        },
      }),
    );
    const ready = await inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json().checks.postgres.status).toBe('failing');
    expect((await inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);

    postgres = await startPostgres();

    // Only what was acknowledged is there; the refused events were never half-stored.
    expect(await storedEventIds()).toEqual(['before']);
    // The API recovers without a restart, and the sender's retry goes through.
    const retried = await waitFor('the API to reach Postgres again', async () => {
      const response = await inject({ method: 'POST', url: '/v1/events', payload: event('during-single') });
      return response.statusCode === 202 ? response : undefined;
    });
    expect(retried.json().status).toBe('accepted');
    expect(await storedEventIds()).toEqual(['before', 'during-single']);
  });
});
