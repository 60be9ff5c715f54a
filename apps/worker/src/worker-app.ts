import type { Config } from '@activity-core/config';
import { createDatabase, createDefinitionsRepository, createEventsRepository, createRunsRepository, createSchedulesRepository, runMigrations } from '@activity-core/db';
import { createEventIngest, type Logger } from '@activity-core/router';
import { createScheduleManager } from '@activity-core/schedule-manager';
import { checkSearchAttributes, createActivities, createRunReconciler, createRunStarter, createWorker } from '@activity-core/temporal';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';

export interface WorkerApp {
  worker: Worker;
  /** Resolves when the worker has shut down. */
  run(): Promise<void>;
  /** Stops polling, lets in-flight work finish, closes connections. */
  close(): Promise<void>;
}

export interface WorkerAppOptions {
  logger: Logger;
  workflowBundle?: { code: string };
  /** Give up connecting to Temporal after this long. @default 60000 */
  connectTimeoutMs?: number;
  identity?: string;
  /**
   * How often the worker reconciles schedules and decides fire times Temporal
   * never delivered (0 disables; it always runs once at start). @default 60000
   */
  scheduleSweepIntervalMs?: number;
}

async function connectWithRetry<T>(what: string, connect: () => Promise<T>, timeoutMs: number, logger: Logger): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await connect();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      logger.warn({ err: error, attempt }, `${what} not reachable yet; retrying`);
      await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, 250 * attempt)));
    }
  }
}

/** The worker's composition root. */
export async function createWorkerApp(config: Config, options: WorkerAppOptions): Promise<WorkerApp> {
  const { logger } = options;
  const timeout = options.connectTimeoutMs ?? 60_000;
  if (config.migrateOnStart) await connectWithRetry('Postgres', () => runMigrations(config.databaseUrl), timeout, logger);
  const database = createDatabase({ url: config.databaseUrl, max: config.databasePoolSize, applicationName: 'activity-core-worker' });
  const address = config.temporal.address;
  const nativeConnection = await connectWithRetry('Temporal', () => NativeConnection.connect({ address }), timeout, logger);
  const clientConnection = await connectWithRetry('Temporal', () => Connection.connect({ address }), timeout, logger);
  try {
    await checkSearchAttributes(clientConnection, config.temporal.namespace);
  } catch (error) {
    await Promise.all([nativeConnection.close(), clientConnection.close(), database.close()]);
    throw error;
  }
  const client = new Client({ connection: clientConnection, namespace: config.temporal.namespace });

  const runs = createRunsRepository(database.db);
  const ingest = createEventIngest({
    definitions: createDefinitionsRepository(database.db),
    events: createEventsRepository(database.db),
    starter: createRunStarter({ client, taskQueue: config.temporal.taskQueue }),
    runs,
    logger,
  });
  const scheduleManager = createScheduleManager({
    client,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    schedules: createSchedulesRepository(database.db),
    definitions: createDefinitionsRepository(database.db),
    runs,
    starter: createRunStarter({ client, taskQueue: config.temporal.taskQueue }),
    logger,
    temporalUiUrl: config.temporal.uiUrl,
  });
  const activities = createActivities({
    runs,
    client,
    // Emitted events go through the same durable ingress as posted ones.
    emitEvent: (envelope) => ingest.ingest(envelope, 'emitted'),
    processScheduleTick: (input) => scheduleManager.processTick(input),
    // Rendered only inside the http task activity; never part of a workflow input.
    secrets: config.taskSecrets,
  });
  const worker = await createWorker({
    connection: nativeConnection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    activities,
    ...(options.workflowBundle === undefined ? {} : { workflowBundle: options.workflowBundle }),
    ...(options.identity === undefined ? {} : { overrides: { identity: options.identity } }),
  });

  const runReconciler = createRunReconciler({ client, runs, logger });

  // Schedules: make Temporal match Postgres, then decide whatever fell due while no worker ran.
  let sweeping: Promise<void> = Promise.resolve();
  const sweep = (): Promise<void> =>
    (sweeping = sweeping.then(async () => {
      try {
        const changes = await scheduleManager.reconcile();
        if (changes.created.length + changes.updated.length + changes.deleted.length > 0) logger.info({ ...changes }, 'schedules reconciled');
        await scheduleManager.processAllDue();
      } catch (error) {
        logger.warn({ err: error }, 'schedule sweep failed; retrying at the next interval');
      }
      try {
        // Runs that could not record their own end (terminated, timed out) get it from Temporal.
        await runReconciler.reconcileOnce();
      } catch (error) {
        logger.warn({ err: error }, 'run reconciliation failed; retrying at the next interval');
      }
    }));
  // In the background: the worker polls at once (a tick waiting since an outage runs right away).
  void sweep();
  const sweepIntervalMs = options.scheduleSweepIntervalMs ?? 60_000;
  const sweepTimer = sweepIntervalMs > 0 ? setInterval(() => void sweep(), sweepIntervalMs) : undefined;
  sweepTimer?.unref();

  let running: Promise<void> | undefined;
  let closing: Promise<void> | undefined;
  return {
    worker,
    run: () => {
      running ??= worker.run();
      return running;
    },
    // Idempotent: a second close waits for the first.
    close: () =>
      (closing ??= (async () => {
        clearInterval(sweepTimer);
        await sweeping;
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await running?.catch(() => undefined);
        await Promise.all([nativeConnection.close(), clientConnection.close(), database.close()]);
      })()),
  };
}
