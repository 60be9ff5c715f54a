import type { Config } from '@activity-core/config';
import type { Logger } from '@activity-core/contracts';
import {
  createCancellationsRepository,
  createEmitBudgetsRepository,
  createCoalesceWindowsRepository,
  createEventWaitsRepository,
  createDatabase,
  createDefinitionsRepository,
  createEventsRepository,
  createPacingRepository,
  createRunOutcomesRepository,
  createRunsRepository,
  createSchedulesRepository,
  runMigrations,
} from '@activity-core/db';
import { createCancelOn, createDependencyMonitor, createEventIngest, createEventWaits } from '@activity-core/router';
import { createScheduleManager } from '@activity-core/schedule-manager';
import {
  checkSearchAttributes,
  createEncryptionCodec,
  createRunCanceller,
  createCoalesceStarter,
  createWaitSignaller,
  createRunOutcomeRecovery,
  createRunStarter,
  diagnoseTemporalConnectFailure,
  temporalConnectionOptions,
  TemporalConnectionSettingsError,
  type Tracing,
} from '@activity-core/temporal/client';
import {
  createEffects,
  createRunOutcomeAnnouncer,
  createWorker,
  EgressPolicy,
  type PrebuiltWorkflowBundle,
} from '@activity-core/temporal/worker';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';

export interface WorkerApp {
  worker: Worker;
  /** Resolves when the worker has shut down. */
  run(): Promise<void>;
  /** Stops polling, lets in-flight work finish, closes connections. */
  close(): Promise<void>;
}

interface WorkerAppOptions {
  logger: Logger;
  /** The workflow code, prebuilt (tests, `npm run build`); bundled from the sources at start when absent. */
  workflowBundle?: PrebuiltWorkflowBundle;
  /** Give up connecting to Temporal after this long. @default 60000 */
  connectTimeoutMs?: number;
  identity?: string;
  /**
   * How often the worker reconciles schedules and decides fire times Temporal
   * never delivered (0 disables; it always runs once at start). @default 60000
   */
  scheduleSweepIntervalMs?: number;
  /** Traces (started by the entry point from OTEL_*): activity and workflow spans, the trace context on workflow starts. */
  tracing?: Tracing;
}

async function connectWithRetry<T>(
  what: string,
  connect: () => Promise<T>,
  timeoutMs: number,
  logger: Logger,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await connect();
    } catch (error) {
      // A refused certificate or key is not fixed by waiting: fail at once, naming the setting.
      if (error instanceof TemporalConnectionSettingsError || Date.now() > deadline) throw error;
      logger.warn({ err: error, attempt }, `${what} not reachable yet; retrying`);
      await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, 250 * attempt)));
    }
  }
}

/** The worker's composition root. */
export async function createWorkerApp(config: Config, options: WorkerAppOptions): Promise<WorkerApp> {
  const { logger } = options;
  const timeout = options.connectTimeoutMs ?? 60_000;
  if (config.migrateOnStart)
    await connectWithRetry('Postgres', () => runMigrations(config.databaseUrl), timeout, logger);
  const database = createDatabase({
    url: config.databaseUrl,
    max: config.databasePoolSize,
    applicationName: 'activity-core-worker',
    // Handled (the pool replaces the connection); the monitor below reports the outage once.
    onConnectionError: (error) => logger.debug({ err: error }, 'a Postgres connection broke; the pool replaces it'),
    preparedStatements: config.databasePreparedStatements,
    onPreparedStatementsOff: (error) =>
      logger.warn(
        { err: error },
        'Postgres (or a pooler in front of it) refused a named prepared statement; running every statement unnamed from now on (set DATABASE_PREPARED_STATEMENTS=false to say so)',
      ),
  });
  // TLS, mTLS and API key as configured; certificate files are read here, once.
  const connectionOptions = temporalConnectionOptions(config.temporal);
  const diagnosed = async <T>(connect: () => Promise<T>): Promise<T> => {
    try {
      return await connect();
    } catch (error) {
      throw (await diagnoseTemporalConnectFailure(error, config.temporal)) ?? error;
    }
  };
  const nativeConnection = await connectWithRetry(
    'Temporal',
    () => diagnosed(() => NativeConnection.connect(connectionOptions)),
    timeout,
    logger,
  );
  // gRPC's reconnect backoff grows to 2 minutes by default; capped as in the API, so the worker's own calls
  // (cron ticks, run outcome recovery, emitted events) reach a Temporal that is back within seconds.
  const channelArgs = { 'grpc.initial_reconnect_backoff_ms': 250, 'grpc.max_reconnect_backoff_ms': 2_000 };
  const clientConnection = await connectWithRetry(
    'Temporal',
    () => diagnosed(() => Connection.connect({ ...connectionOptions, channelArgs })),
    timeout,
    logger,
  );
  try {
    await checkSearchAttributes(clientConnection, config.temporal.namespace);
  } catch (error) {
    await Promise.all([nativeConnection.close(), clientConnection.close(), database.close()]);
    throw error;
  }
  // Payloads (event data, definitions, task results) are ciphertext in Temporal when keys are configured.
  const payloadCodecs =
    config.payloadEncryption === null ? undefined : [createEncryptionCodec(config.payloadEncryption.keys.all)];
  const client = new Client({
    connection: clientConnection,
    namespace: config.temporal.namespace,
    ...(payloadCodecs === undefined ? {} : { dataConverter: { payloadCodecs } }),
    ...(options.tracing === undefined ? {} : { interceptors: options.tracing.clientInterceptors() }),
  });

  const runs = createRunsRepository(database.db);
  const eventWaits = createEventWaitsRepository(database.db);
  const coalesceWindows = createCoalesceWindowsRepository(database.db);
  const ingest = createEventIngest({
    definitions: createDefinitionsRepository(database.db),
    events: createEventsRepository(database.db, { statements: database.statements }),
    starter: createRunStarter({ client, taskQueue: config.temporal.taskQueue }),
    runs,
    logger,
    eventDataLimits: config.eventData,
    // Emitted events are paced like posted ones (docs/pacing.md).
    pacing: createPacingRepository(database.db),
    // Emitted events cancel runs too; the API's dispatcher finishes what this process cannot.
    cancelOn: createCancelOn({
      cancellations: createCancellationsRepository(database.db),
      canceller: createRunCanceller({ client }),
      logger,
    }),
    // Emitted events resume waiting tasks too.
    eventWaits: createEventWaits({ eventWaits, signaller: createWaitSignaller({ client }), logger }),
    // Emitted events are debounced and batched too.
    coalescing: {
      windows: coalesceWindows,
      starter: createCoalesceStarter({ client, taskQueue: config.temporal.taskQueue }),
    },
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
  // Runs that end failed or cancelled announce it with a system event through the same ingest (ADR 0038).
  const announcer = createRunOutcomeAnnouncer({
    outcomes: createRunOutcomesRepository(database.db),
    emit: (envelope, origin) => ingest.ingest(envelope, 'system', origin),
    maxHops: config.emit.maxHops,
    logger,
  });
  const emitBudgets = createEmitBudgetsRepository(database.db);
  const effects = createEffects({
    runs,
    announcer,
    client,
    // Emitted events go through the same durable ingress as posted ones.
    emitEvent: (envelope, origin) => ingest.ingest(envelope, 'emitted', origin),
    emitMaxHops: config.emit.maxHops,
    // Bounds a chain's breadth as EMIT_MAX_HOPS bounds its depth: counted in Postgres, exact across workers.
    emitBudget: { limit: config.emit.maxPerRoot, claim: emitBudgets.claim },
    ...(config.concurrency.queueMaxBytes === undefined
      ? {}
      : { concurrencyQueueMaxBytes: config.concurrency.queueMaxBytes }),
    processScheduleTick: (input) => scheduleManager.processTick(input),
    // Rendered only inside the http task activity; never part of a workflow input.
    secrets: config.taskSecrets,
    // Private, loopback and link-local destinations are refused unless HTTP_TASK_EGRESS_ALLOW opens them.
    egress: new EgressPolicy(config.httpTasks.egressAllow),
    logger,
    // wait_for_event tasks record their waits here; the ingest matches events against them.
    eventWaits,
    // run_activity tasks look up the activity they run here, and count the runs they start per root run.
    definitions: createDefinitionsRepository(database.db),
    callBudget: { claim: emitBudgets.claim },
    // Debounce windows' workflows close their windows and start their runs here.
    coalescing: {
      coalesceWindows,
      definitions: createDefinitionsRepository(database.db),
      runStarter: createRunStarter({ client, taskQueue: config.temporal.taskQueue }),
    },
  });
  const worker = await createWorker({
    connection: nativeConnection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    effects,
    ...(payloadCodecs === undefined ? {} : { payloadCodecs }),
    ...(options.workflowBundle === undefined ? {} : { workflowBundle: options.workflowBundle }),
    overrides: {
      ...(options.identity === undefined ? {} : { identity: options.identity }),
      // Bounded instead of the SDK's heap-sized defaults: see WORKER_MAX_* in docs/operating.md.
      maxCachedWorkflows: config.worker.maxCachedWorkflows,
      maxConcurrentWorkflowTaskExecutions: config.worker.maxConcurrentWorkflowTasks,
      maxConcurrentActivityTaskExecutions: config.worker.maxConcurrentActivities,
      maxConcurrentLocalActivityExecutions: config.worker.maxConcurrentLocalActivities,
    },
    ...(options.tracing === undefined ? {} : { tracing: options.tracing }),
  });

  const runOutcomeRecovery = createRunOutcomeRecovery({ client, runs, logger, announcer });

  // Logs when Postgres or Temporal is lost and regained. The worker rides out both on its own:
  // activities fail and are retried by Temporal, and the SDK's pollers reconnect (within about 10 s).
  const dependencies = createDependencyMonitor({
    logger,
    checks: [
      { name: 'postgres', check: async () => void (await database.pool.query('SELECT 1')) },
      {
        name: 'temporal',
        check: async () =>
          void (await clientConnection.withDeadline(Date.now() + 2_500, () =>
            clientConnection.healthService.check({}),
          )),
      },
    ],
  });
  dependencies.start();

  // Schedules: make Temporal match Postgres, then decide whatever fell due while no worker ran.
  // Sweeps trust Temporal's schedule listing for the schedules it shows as desired instead of
  // describing every one (ADR 0042). A sweep still running when the next one is due is not queued
  // behind it: the interval after it starts the next.
  let sweeping: Promise<void> = Promise.resolve();
  let sweepRunning = false;
  const sweep = (): Promise<void> => {
    if (sweepRunning) return sweeping;
    sweepRunning = true;
    sweeping = (async () => {
      try {
        const changes = await scheduleManager.reconcile({ compareWith: 'listing' });
        if (changes.created.length + changes.updated.length + changes.deleted.length > 0)
          logger.info({ ...changes }, 'schedules reconciled');
        await scheduleManager.processAllDue();
      } catch (error) {
        logger.warn({ err: error }, 'schedule sweep failed; retrying at the next interval');
      }
      try {
        // Runs that could not record their own end (terminated, timed out) get it from Temporal.
        await runOutcomeRecovery.recoverOnce();
      } catch (error) {
        logger.warn({ err: error }, 'run outcome recovery failed; retrying at the next interval');
      } finally {
        sweepRunning = false;
      }
    })();
    return sweeping;
  };
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
        await dependencies.stop();
        await sweeping;
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await running?.catch(() => undefined);
        await Promise.all([nativeConnection.close(), clientConnection.close(), database.close()]);
      })()),
  };
}
