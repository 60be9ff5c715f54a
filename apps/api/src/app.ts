/**
 * The API process: wiring (app-wiring.ts builds every dependency from the
 * config), the HTTP server over the services, then the start-up behaviour
 * (app-startup.ts: checks, background loops, bounded shutdown).
 */
import type { Config } from '@activity-core/config';
import type { Dispatcher } from '@activity-core/router';
import type { FastifyInstance } from 'fastify';
import {
  checkTemporalSetup,
  closeInSteps,
  prepareWebhookSources,
  startBackgroundLoops,
  startScheduleReconcile,
} from './app-startup';
import { wireApi, type ApiAppOptions } from './app-wiring';
import { buildServer } from './server';

export type { ApiAppOptions } from './app-wiring';

export interface ApiApp {
  server: FastifyInstance;
  /** The background dispatcher (started unless `dispatcher: false`). */
  dispatcher: Dispatcher;
  close(): Promise<void>;
}

/** The API's composition root: wiring, server, start-up behaviour. */
export async function createApiApp(config: Config, options: ApiAppOptions = {}): Promise<ApiApp> {
  const wiring = await wireApi(config, options);
  let server: FastifyInstance;
  try {
    server = await buildServer(wiring.serverDeps, wiring.serverOptions);
  } catch (error) {
    await wiring.database.close();
    throw error;
  }
  wiring.logger.target = server.log;
  wiring.dependencies.start();
  await prepareWebhookSources(wiring, server);
  await checkTemporalSetup(wiring, config, server);
  const reconcile = startScheduleReconcile(wiring, server);
  const { dispatcher, retention, bulkRerunRunner, bulkReplayRunner, heldExpiry } = startBackgroundLoops(
    wiring,
    config,
    options,
    server,
  );

  return {
    server,
    dispatcher,
    close: () =>
      closeInSteps(server, [
        ['the HTTP server', () => server.close()],
        ['the dependency monitor', () => wiring.dependencies.stop()],
        ['the dispatcher', () => dispatcher.stop()],
        ['the retention sweeper', async () => await retention?.stop()],
        ['the held-event expiry sweep', () => heldExpiry.stop()],
        ['the bulk re-run runner', () => bulkRerunRunner.stop()],
        ['the bulk replay runner', () => bulkReplayRunner.stop()],
        // Before the connection closes: the client's retry timer would otherwise call on a closed channel (an uncaught error).
        ['the start-up schedule reconciliation', () => reconcile.stop()],
        ['the Temporal connection', () => wiring.connection.close()],
        ['the Postgres pool', () => wiring.database.close()],
      ]),
  };
}
