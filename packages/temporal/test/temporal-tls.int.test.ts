import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { inject } from 'vitest';
import { eventRunWorkflowId, runIdFor } from '@activity-core/contracts';
import { TemporalConnectionSettingsError } from '@activity-core/temporal/client';
import { createApiApp } from '../../../apps/api/src/app';
import { createWorkerApp } from '../../../apps/worker/src/worker-app';
import { createTestDatabase, silentLogger, testConfig, waitFor, workflowBundle } from '../../../test/harness';
import { makePki, startTlsProxy, type TestPki, type TlsProxy } from './tls-proxy';

/**
 * A secured Temporal: the dev server behind a TLS-terminating proxy that
 * requires a client certificate signed by its CA. The API and the worker
 * reach Temporal only through it.
 */
let pki: TestPki;
let stranger: TestPki;
let proxy: TlsProxy;
let database: Awaited<ReturnType<typeof createTestDatabase>>;

beforeAll(async () => {
  pki = makePki('temporal');
  stranger = makePki('stranger');
  proxy = await startTlsProxy(pki, inject('temporalAddress'));
  database = await createTestDatabase();
});
afterAll(async () => {
  await proxy?.close();
  await database?.drop();
});

const mtls = (overrides: Record<string, string> = {}) => ({
  TEMPORAL_ADDRESS: proxy.address,
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caCert,
  TEMPORAL_TLS_CLIENT_CERT_PATH: pki.clientCert,
  TEMPORAL_TLS_CLIENT_KEY_PATH: pki.clientKey,
  ...overrides,
});

describe('a Temporal behind TLS that requires a client certificate', () => {
  test('the API and a worker configured for mTLS run an event to success through it', async () => {
    const config = testConfig(database.url, mtls());
    expect(config.temporal.tls).not.toBeNull();
    const acceptedBefore = proxy.accepted;
    const api = await createApiApp(config, { logger: false, dispatcherIntervalMs: 200 });
    const worker = await createWorkerApp(config, { logger: silentLogger, workflowBundle: await workflowBundle() });
    void worker.run();
    try {
      const registered = await api.server.inject({
        method: 'POST',
        url: '/v1/activities',
        payload: {
          name: 'over-mtls',
          triggers: [{ type: 'event', event_type: 'tls.checked' }],
          tasks: [{ type: 'noop' }, { type: 'noop' }],
        },
      });
      expect(registered.statusCode, registered.body).toBe(201);
      const activityId = (registered.json() as { id: string }).id;

      const posted = await api.server.inject({
        method: 'POST',
        url: '/v1/events',
        payload: {
          event_id: 'evt_tls_1',
          event_type: 'tls.checked',
          source: 'test',
          occurred_at: '2026-03-01T09:00:00Z',
          data: {},
        },
      });
      expect(posted.statusCode, posted.body).toBe(202);
      const runId = runIdFor(eventRunWorkflowId(activityId, 'evt_tls_1'));

      const run = await waitFor(
        'the run to succeed',
        async () => {
          const response = await api.server.inject({ method: 'GET', url: `/v1/runs/${runId}` });
          const body = response.json() as { status?: string; tasks?: Array<{ status: string }> };
          return response.statusCode === 200 && body.status === 'succeeded' ? body : undefined;
        },
        60_000,
      );
      expect(run.tasks?.map((task) => task.status)).toEqual(['succeeded', 'succeeded']);
      // Both processes came through the proxy, each with a certificate it accepted.
      expect(proxy.accepted).toBeGreaterThan(acceptedBefore);
    } finally {
      await worker.close();
      await api.close();
    }
  });

  test('a worker with a client certificate from another CA fails at start-up naming the setting, without waiting out its connect timeout', async () => {
    const config = testConfig(
      database.url,
      mtls({ TEMPORAL_TLS_CLIENT_CERT_PATH: stranger.clientCert, TEMPORAL_TLS_CLIENT_KEY_PATH: stranger.clientKey }),
    );
    const started = Date.now();
    const failure = await createWorkerApp(config, {
      logger: silentLogger,
      workflowBundle: await workflowBundle(),
      connectTimeoutMs: 60_000,
    }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(TemporalConnectionSettingsError);
    expect((failure as TemporalConnectionSettingsError).setting).toBe('TEMPORAL_TLS_CLIENT_CERT_PATH');
    expect((failure as Error).message).toMatch(/refused this client certificate/);
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  test('the API refuses to start when the server certificate is not signed by the configured CA, naming the CA setting', async () => {
    const config = testConfig(database.url, mtls({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: stranger.caCert }));
    const failure = await createApiApp(config, { logger: false }).then(
      async (api) => {
        await api.close();
        return undefined;
      },
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(TemporalConnectionSettingsError);
    expect((failure as TemporalConnectionSettingsError).setting).toBe('TEMPORAL_TLS_SERVER_CA_CERT_PATH');
    expect((failure as Error).message).toMatch(/not signed by this CA/);
  });

  test('a worker without a client certificate is told the server requires one', async () => {
    const config = testConfig(database.url, {
      TEMPORAL_ADDRESS: proxy.address,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caCert,
    });
    const failure = await createWorkerApp(config, {
      logger: silentLogger,
      workflowBundle: await workflowBundle(),
    }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(TemporalConnectionSettingsError);
    expect((failure as Error).message).toMatch(/requires a client certificate.*TEMPORAL_TLS_CLIENT_CERT_PATH/);
  });

  test('a worker with TLS off against the TLS endpoint is told to turn TLS on', async () => {
    const config = testConfig(database.url, { TEMPORAL_ADDRESS: proxy.address });
    const failure = await createWorkerApp(config, {
      logger: silentLogger,
      workflowBundle: await workflowBundle(),
    }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(TemporalConnectionSettingsError);
    expect((failure as TemporalConnectionSettingsError).setting).toBe('TEMPORAL_TLS');
  });

  test('a certificate file that cannot be read fails the start naming the setting and the path', async () => {
    const config = testConfig(database.url, mtls({ TEMPORAL_TLS_CLIENT_KEY_PATH: `${pki.dir}/missing.key` }));
    await expect(createApiApp(config, { logger: false })).rejects.toThrow(
      /^TEMPORAL_TLS_CLIENT_KEY_PATH: cannot read .*missing\.key \(ENOENT\)/,
    );
  });
});
