import type { Config } from '@activity-core/config';
import { secondsCronIssues, type Logger } from '@activity-core/contracts';
import {
  createAuditRepository,
  createCancellationsRepository,
  createEventWaitsRepository,
  createDatabase,
  createDefinitionsRepository,
  createEventsRepository,
  createRerunsRepository,
  createRunsRepository,
  createSchedulesRepository,
  createWebhookSourcesRepository,
  runMigrations,
} from '@activity-core/db';
import {
  createCancelOn,
  createEventWaits,
  createDependencyMonitor,
  createDispatcher,
  createEventIngest,
  createEventRetention,
  type Dispatcher,
} from '@activity-core/router';
import { createScheduleManager, scheduleIssues } from '@activity-core/schedule-manager';
import { createSecretBox } from '@activity-core/webhooks';
import {
  checkSearchAttributes,
  createEncryptionCodec,
  createRunCanceller,
  createWaitSignaller,
  createRunStarter,
  diagnoseTemporalConnectFailure,
  MissingSearchAttributesError,
  temporalConnectionOptions,
  type Tracing,
} from '@activity-core/temporal/client';
import { Client, Connection } from '@temporalio/client';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { createApiMetrics } from './metrics';
import { createWebhookLimits } from './plugins/rate-limit';
import { buildServer } from './server';
import { createActivityService } from './services/activity-service';
import { createAuditService } from './services/audit-service';
import { createDefinitionHistoryService } from './services/definition-history-service';
import { createEventService } from './services/event-service';
import { createBulkRerunRunner } from './services/bulk-rerun-runner';
import { createRerunService } from './services/rerun-service';
import { createRunService } from './services/run-service';
import { createScheduleObserver, createScheduleService } from './services/schedule-service';
import { createWebhookService } from './services/webhook-service';
import { createWebhookSourceCatalog } from './services/webhook-source-catalog';

function forwardingLogger(): Logger & { target: Logger | undefined } {
  const forward =
    (level: keyof Logger) =>
    (obj: object, message?: string): void => {
      holder.target?.[level](obj, message);
    };
  const holder: Logger & { target: Logger | undefined } = {
    target: undefined,
    debug: forward('debug'),
    info: forward('info'),
    warn: forward('warn'),
    error: forward('error'),
  };
  return holder;
}

export interface ApiApp {
  server: FastifyInstance;
  /** The background dispatcher (started unless `dispatcher: false`). */
  dispatcher: Dispatcher;
  close(): Promise<void>;
}

export interface ApiAppOptions {
  logger?: FastifyServerOptions['logger'];
  /** Run the background dispatcher in this process. @default true */
  dispatcher?: boolean;
  dispatcherIntervalMs?: number;
  /** Events the dispatcher claims per round. @default 50 */
  dispatcherBatchSize?: number;
  /** Carry out bulk re-runs in this process (any API process may take one over). @default true */
  bulkReruns?: boolean;
  /** How long a bulk re-run's lease lasts without progress before another process takes it over. @default 15000 */
  bulkRerunLeaseMs?: number;
  /** Run the event retention sweeper in this process. @default true */
  retention?: boolean;
  /** How long a schedule request (other than a backfill) waits for Temporal before answering 503. @default 10000 */
  temporalDeadlineMs?: number;
  /** Traces (started by the entry point from OTEL_*): request spans, and the trace context on every workflow start. */
  tracing?: Tracing;
}

/** Longest each shutdown step may take before close() moves on without it. */
const CLOSE_STEP_TIMEOUT_MS = 10_000;

/**
 * The API's composition root: every dependency is built here from the
 * parsed config and handed to the services that need it.
 */
export async function createApiApp(config: Config, options: ApiAppOptions = {}): Promise<ApiApp> {
  // TLS, mTLS and API key as configured; certificate files are read here, once (an unreadable one fails the start).
  const temporalOptions = temporalConnectionOptions(config.temporal);
  if (config.migrateOnStart) await runMigrations(config.databaseUrl);
  // A broken pooled connection is counted (the metrics are built on the pool, so after it); the pool replaces it.
  let connectionLost = (): void => undefined;
  const database = createDatabase({
    url: config.databaseUrl,
    max: config.databasePoolSize,
    applicationName: 'activity-core-api',
    onConnectionError: () => connectionLost(),
    preparedStatements: config.databasePreparedStatements,
    onPreparedStatementsOff: (error) =>
      logger.warn(
        { err: error },
        'Postgres (or a pooler in front of it) refused a named prepared statement; running every statement unnamed from now on (set DATABASE_PREPARED_STATEMENTS=false to say so)',
      ),
  });
  // Lazy: the API starts (and keeps accepting events durably) while Temporal is down.
  const connection = Connection.lazy({
    ...temporalOptions,
    // gRPC's reconnect backoff grows to 2 minutes by default, so a Temporal that
    // comes back after an outage could wait that long for the first routed
    // event. Capped at 2 s, in line with the ingest's availability probe.
    channelArgs: { 'grpc.initial_reconnect_backoff_ms': 250, 'grpc.max_reconnect_backoff_ms': 2_000 },
  });
  // Payloads (event data, definitions, task results) are ciphertext in Temporal when keys are configured.
  const payloadCodec =
    config.payloadEncryption === null ? undefined : createEncryptionCodec(config.payloadEncryption.keys.all);
  const client = new Client({
    connection,
    namespace: config.temporal.namespace,
    ...(payloadCodec === undefined ? {} : { dataConverter: { payloadCodecs: [payloadCodec] } }),
    ...(options.tracing === undefined ? {} : { interceptors: options.tracing.clientInterceptors() }),
  });

  const definitions = createDefinitionsRepository(database.db);
  const events = createEventsRepository(database.db, { statements: database.statements });
  const runs = createRunsRepository(database.db);
  const webhookSources = createWebhookSourcesRepository(database.db);
  const secretBox = config.webhooks.secretKeys.length > 0 ? createSecretBox(config.webhooks.secretKeys) : undefined;
  const starter = createRunStarter({ client, taskQueue: config.temporal.taskQueue });
  const rerunsRepository = createRerunsRepository(database.db);
  // The ingest is built before the server that owns the logger; it logs through this forwarder.
  const logger = forwardingLogger();
  const silentUntilServer = logger;

  const metrics = createApiMetrics({ pool: database.pool });
  connectionLost = () => metrics.postgresConnectionLost();
  /** Temporal's health check, with a deadline so a probe of an unreachable server ends instead of retrying past the request. */
  const temporalHealthCheck = () =>
    connection.withDeadline(Date.now() + 2_500, () => connection.healthService.check({}));
  // Says when Postgres or Temporal was lost and regained (log + metrics); /readyz runs the same checks.
  const dependencies = createDependencyMonitor({
    logger,
    onChange: (name, up) => metrics.dependencyChanged(name, up),
    checks: [
      { name: 'postgres', check: async () => void (await database.pool.query('SELECT 1')) },
      { name: 'temporal', check: async () => void (await temporalHealthCheck()) },
    ],
  });
  const reruns = createRerunService({ runs, reruns: rerunsRepository, definitions, starter, logger });
  const cancellations = createCancellationsRepository(database.db);
  const cancelOn = createCancelOn({
    cancellations,
    canceller: createRunCanceller({ client }),
    logger: silentUntilServer,
  });
  const eventWaitsRepository = createEventWaitsRepository(database.db);
  const eventWaits = createEventWaits({
    eventWaits: eventWaitsRepository,
    signaller: createWaitSignaller({ client }),
    logger: silentUntilServer,
  });
  const ingest = metrics.countIngest(
    createEventIngest({
      definitions,
      events,
      starter,
      runs,
      logger: silentUntilServer,
      eventDataLimits: config.eventData,
      cancelOn,
      eventWaits,
    }),
  );
  const scheduleManager = createScheduleManager({
    client,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    schedules: createSchedulesRepository(database.db),
    definitions,
    runs,
    starter,
    logger,
    temporalUiUrl: config.temporal.uiUrl,
  });
  // One cache of the webhook sources for deliveries and for the reserved sources of posted events.
  const webhookCatalog = createWebhookSourceCatalog(webhookSources);
  const webhooks = createWebhookService({
    sources: webhookSources,
    catalog: webhookCatalog,
    events,
    ingest,
    logger,
    limits: createWebhookLimits({ perSource: config.rateLimit, failuresPerAddress: config.authFailureLimit }),
    ...(secretBox === undefined ? {} : { secretBox }),
  });
  let server: FastifyInstance;
  try {
    server = await buildServer(
      {
        definitionHistory: createDefinitionHistoryService({ definitions }),
        activities: createActivityService({
          definitions,
          observers: [createScheduleObserver({ manager: scheduleManager, client, logger: () => logger })],
          validators: [scheduleIssues, (definition) => secondsCronIssues(definition, config.cron)],
        }),
        schedules: createScheduleService({
          manager: scheduleManager,
          client,
          runs,
          reruns,
          ...(options.temporalDeadlineMs === undefined ? {} : { temporalDeadlineMs: options.temporalDeadlineMs }),
          temporalAnswers: () =>
            temporalHealthCheck().then(
              () => true,
              () => false,
            ),
        }),
        events: createEventService({
          ingest,
          events,
          cancellations,
          eventWaits: eventWaitsRepository,
          webhookSources: webhookCatalog,
          ingestKeyScopes: config.ingestKeyScopes,
          logger,
        }),
        runs: createRunService({
          runs,
          eventWaits: eventWaitsRepository,
          client,
          temporalUiUrl: config.temporal.uiUrl,
          namespace: config.temporal.namespace,
          reruns,
        }),
        webhooks,
        metrics,
        audit: createAuditService({ audit: createAuditRepository(database.db) }),
        ownership: {
          activityName: (id) => definitions.nameOf(id),
          runActivity: async (runId) => (await runs.getRun(runId))?.activityId,
        },
        probes: dependencies.probes(),
        ...(payloadCodec === undefined || config.payloadEncryption === null
          ? {}
          : { codec: { codec: payloadCodec, allowedOrigins: config.payloadEncryption.codecCorsOrigins } }),
      },
      {
        auth: config.auth,
        bodyLimitBytes: config.http.bodyLimitBytes,
        timeouts: {
          requestMs: config.http.requestTimeoutMs,
          headersMs: config.http.headersTimeoutMs,
          keepAliveMs: config.http.keepAliveTimeoutMs,
        },
        logger: options.logger ?? {
          level: config.logLevel,
          ...(config.logFormat === 'pretty'
            ? {
                transport: {
                  target: 'pino-pretty',
                  options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true },
                },
              }
            : {}),
        },
        rateLimit: config.rateLimit,
        authFailureLimit: config.authFailureLimit,
        trustProxy: config.trustProxy,
        tracing: options.tracing !== undefined,
      },
    );
  } catch (error) {
    await database.close();
    throw error;
  }
  logger.target = server.log;
  dependencies.start();
  if (secretBox === undefined) {
    server.log.warn('WEBHOOK_SECRET_KEYS is empty: webhook secrets are stored in plain text in Postgres');
  }
  // Seals plaintext secrets (when WEBHOOK_SECRET_KEYS is set) and warns about sources registered under older, weaker rules.
  try {
    await webhooks.prepareStoredSources();
  } catch (error) {
    await server.close();
    await database.close();
    throw error;
  }

  try {
    // Bounded: an unreachable Temporal must not hold up the start (events are accepted without it).
    await connection.withDeadline(Date.now() + 3_000, () =>
      checkSearchAttributes(connection, config.temporal.namespace),
    );
  } catch (error) {
    // Missing search attributes, or TLS/credential settings Temporal refuses: waiting fixes neither, so the start fails naming the setting.
    const misconfigured =
      error instanceof MissingSearchAttributesError
        ? error
        : await diagnoseTemporalConnectFailure(error, config.temporal);
    if (misconfigured !== undefined) {
      await dependencies.stop();
      // The lazy Temporal connection is left to the exiting process: closing it now would let a pending
      // gRPC retry timer of the refused calls fire on a closed channel (an uncaught error).
      await database.close();
      throw misconfigured;
    }
    server.log.warn({ err: error }, 'Temporal is not reachable yet; events are stored and routed once it is');
  }

  // Make Temporal Schedules match Postgres. In the background: the API serves while Temporal is down, and workers reconcile periodically.
  // Aborted by close(). A short deadline: workers reconcile every minute anyway, and close() waits for it.
  const stopReconcile = new AbortController();
  const startupReconcile = client
    .withDeadline(new Date(Date.now() + 10_000), () =>
      client.withAbortSignal(stopReconcile.signal, () => scheduleManager.reconcile()),
    )
    .then(
      (changes) => {
        if (changes.created.length + changes.updated.length + changes.deleted.length > 0)
          server.log.info({ ...changes }, 'schedules reconciled');
      },
      (error: unknown) =>
        server.log.warn({ err: error }, 'schedule reconciliation at start-up failed; workers retry it periodically'),
    );

  const dispatcher = createDispatcher({
    events,
    ingest,
    logger: server.log,
    ...(options.dispatcherIntervalMs === undefined ? {} : { intervalMs: options.dispatcherIntervalMs }),
    ...(options.dispatcherBatchSize === undefined ? {} : { batchSize: options.dispatcherBatchSize }),
  });
  if (options.dispatcher ?? true) dispatcher.start();
  // Only when an operator chose a retention: by default event ids are remembered forever.
  const retentionDays = config.events.retentionDays;
  const retention =
    retentionDays === null
      ? undefined
      : createEventRetention({ events, logger: server.log, retentionMs: retentionDays * 86_400_000 });
  if (options.retention ?? true) retention?.start();
  // Bulk re-runs accepted by any process, or left behind by one that died, are carried out here.
  const bulkRerunRunner = createBulkRerunRunner({
    reruns: rerunsRepository,
    service: reruns,
    logger: server.log,
    ...(options.bulkRerunLeaseMs === undefined ? {} : { leaseMs: options.bulkRerunLeaseMs }),
  });
  if (options.bulkReruns ?? true) {
    reruns.onBulkAccepted(() => bulkRerunRunner.nudge());
    bulkRerunRunner.start();
  }

  return {
    server,
    dispatcher,
    close: async () => {
      // Each step is bounded: a dependency that stops answering mid-shutdown (a query on a connection
      // Postgres never closes, a stuck round) must not hold the process up forever. An overrun is logged.
      const step = async (what: string, run: () => Promise<unknown>): Promise<void> => {
        let timer: NodeJS.Timeout | undefined;
        const overran = new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), CLOSE_STEP_TIMEOUT_MS);
        });
        const finished = run().then(
          () => false,
          (error: unknown) => {
            server.log.warn({ err: error }, `${what} failed while closing`);
            return false;
          },
        );
        if (await Promise.race([finished, overran]))
          server.log.warn(`${what} did not finish within ${CLOSE_STEP_TIMEOUT_MS} ms; closing without waiting for it`);
        clearTimeout(timer);
      };
      await step('the HTTP server', () => server.close());
      await step('the dependency monitor', () => dependencies.stop());
      await step('the dispatcher', () => dispatcher.stop());
      await step('the retention sweeper', async () => await retention?.stop());
      await step('the bulk re-run runner', () => bulkRerunRunner.stop());
      // Awaited before the connection closes: the client's retry timer would otherwise call on a closed
      // channel (an uncaught error). The abort ends calls in flight; a connect to an unreachable Temporal
      // still runs to the reconcile's deadline.
      stopReconcile.abort();
      await step('the start-up schedule reconciliation', () => startupReconcile);
      await step('the Temporal connection', () => connection.close());
      await step('the Postgres pool', () => database.close());
    },
  };
}
