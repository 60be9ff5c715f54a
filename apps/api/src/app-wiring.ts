/**
 * The API's wiring: every dependency built from the parsed config and handed
 * to the services that need it. Migrates Postgres when configured to; opens
 * the Postgres pool (Temporal's connection is lazy); starts no loop.
 * Start-up behaviour is in app-startup.ts.
 */
import type { Config } from '@activity-core/config';
import { secondsCronIssues, type Logger } from '@activity-core/contracts';
import {
  createAuditRepository,
  createCancellationsRepository,
  createDatabase,
  createDefinitionsRepository,
  createEventsRepository,
  createEventWaitsRepository,
  createHeldEventsRepository,
  createPacingRepository,
  createReplaysRepository,
  createDeadLettersRepository,
  createRerunsRepository,
  createRunsRepository,
  createSchedulesRepository,
  createWebhookSourcesRepository,
  runMigrations,
  type Database,
  createCoalesceWindowsRepository,
} from '@activity-core/db';
import {
  createCancelOn,
  createDependencyMonitor,
  createEventIngest,
  createEventWaits,
  createWindowRevival,
} from '@activity-core/router';
import { createScheduleManager, scheduleIssues } from '@activity-core/schedule-manager';
import { createSecretBox } from '@activity-core/webhooks';
import {
  createEncryptionCodec,
  createRunCanceller,
  createRunStarter,
  createWaitSignaller,
  temporalConnectionOptions,
  type Tracing,
  createCoalesceStarter,
} from '@activity-core/temporal/client';
import { Client, Connection } from '@temporalio/client';
import type { FastifyServerOptions } from 'fastify';
import { createApiMetrics } from './metrics';
import { createWebhookLimits } from './plugins/rate-limit';
import type { ServerDeps, ServerOptions } from './server';
import { createActivityService } from './services/activity-service';
import { createAuditService } from './services/audit-service';
import { createDefinitionHistoryService } from './services/definition-history-service';
import { createEventService } from './services/event-service';
import { createHeldEventsService } from './services/held-events-service';
import { createReplayService } from './services/replay-service';
import { createDeadLetterService } from './services/dead-letter-service';
import { createRerunService } from './services/rerun-service';
import { createRunService } from './services/run-service';
import { createScheduleObserver, createScheduleService } from './services/schedule-service';
import { createWebhookService } from './services/webhook-service';
import { createWebhookSourceCatalog } from './services/webhook-source-catalog';

/** What a caller may choose about an API process beyond its config (tests turn loops off and shorten intervals). */
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
  /** Run the held events' expiry sweep in this process. @default true */
  heldExpiry?: boolean;
  /** Time between held-event expiry sweeps. @default 60000 */
  heldExpiryIntervalMs?: number;
  /** How long a schedule request (other than a backfill) waits for Temporal before answering 503. @default 10000 */
  temporalDeadlineMs?: number;
  /** Traces (started by the entry point from OTEL_*): request spans, and the trace context on every workflow start. */
  tracing?: Tracing;
}

/** A logger that writes nowhere until `target` is set (the server's, once it exists). */
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

/** Postgres, Temporal and what is read through them: the stores every service shares. */
async function connectStores(config: Config, options: ApiAppOptions, logger: Logger) {
  // TLS, mTLS and API key as configured; certificate files are read here, once (an unreadable one fails the start).
  const temporalOptions = temporalConnectionOptions(config.temporal);
  if (config.migrateOnStart) await runMigrations(config.databaseUrl);
  // A broken pooled connection is counted (the metrics are built on the pool, so after it); the pool replaces it.
  let connectionLost = (): void => undefined;
  const database: Database = createDatabase({
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
  const metrics = createApiMetrics({ pool: database.pool });
  connectionLost = () => metrics.postgresConnectionLost();
  return { database, connection, client, payloadCodec, metrics };
}

/** How the HTTP server is configured: limits, timeouts, logging, auth. */
function serverOptionsOf(config: Config, options: ApiAppOptions): ServerOptions {
  return {
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
  };
}

/** The services the HTTP server serves, over the parts `wireApi` built. */
function serverDepsOf(parts: {
  config: Config;
  options: ApiAppOptions;
  database: Database;
  client: Client;
  payloadCodec: ReturnType<typeof createEncryptionCodec> | undefined;
  metrics: ReturnType<typeof createApiMetrics>;
  definitions: ReturnType<typeof createDefinitionsRepository>;
  runs: ReturnType<typeof createRunsRepository>;
  events: ReturnType<typeof createEventsRepository>;
  cancellations: ReturnType<typeof createCancellationsRepository>;
  eventWaitsRepository: ReturnType<typeof createEventWaitsRepository>;
  scheduleManager: ReturnType<typeof createScheduleManager>;
  webhookCatalog: ReturnType<typeof createWebhookSourceCatalog>;
  webhooks: ReturnType<typeof createWebhookService>;
  reruns: ReturnType<typeof createRerunService>;
  replays: ReturnType<typeof createReplayService>;
  replaysRepository: ReturnType<typeof createReplaysRepository>;
  heldEvents: ReturnType<typeof createHeldEventsService>;
  deadLetters: ReturnType<typeof createDeadLetterService>;
  ingest: Parameters<typeof createEventService>[0]['ingest'];
  dependencies: ReturnType<typeof createDependencyMonitor>;
  temporalHealthCheck: () => Promise<unknown>;
  logger: Logger;
}): ServerDeps {
  const { config, options, database, client, payloadCodec, metrics, definitions, runs, events } = parts;
  const { cancellations, eventWaitsRepository, scheduleManager, webhookCatalog, webhooks, reruns, ingest } = parts;
  const { dependencies, temporalHealthCheck, logger, replays, replaysRepository, heldEvents, deadLetters } = parts;
  return {
    definitionHistory: createDefinitionHistoryService({ definitions }),
    activities: createActivityService({
      definitions,
      held: heldEvents,
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
      replays: replaysRepository,
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
    replays,
    heldEvents,
    deadLetters,
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
  };
}

/**
 * Every dependency of the API process: the stores, the event path, the
 * services the server serves, and what the start-up behaviour needs.
 */
export async function wireApi(config: Config, options: ApiAppOptions) {
  // The parts built before the server that owns the logger log through this forwarder.
  const logger = forwardingLogger();
  const { database, connection, client, payloadCodec, metrics } = await connectStores(config, options, logger);
  const definitions = createDefinitionsRepository(database.db);
  const events = createEventsRepository(database.db, { statements: database.statements });
  const runs = createRunsRepository(database.db);
  const webhookSources = createWebhookSourcesRepository(database.db);
  const secretBox = config.webhooks.secretKeys.length > 0 ? createSecretBox(config.webhooks.secretKeys) : undefined;
  const starter = createRunStarter({ client, taskQueue: config.temporal.taskQueue });
  const rerunsRepository = createRerunsRepository(database.db);

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
  const eventWaitsRepository = createEventWaitsRepository(database.db);
  const pacing = createPacingRepository(database.db);
  const coalesceWindows = createCoalesceWindowsRepository(database.db);
  const coalesceStarter = createCoalesceStarter({ client, taskQueue: config.temporal.taskQueue });
  const ingest = metrics.countIngest(
    createEventIngest({
      definitions,
      events,
      starter,
      runs,
      logger,
      eventDataLimits: config.eventData,
      // Dead letters (docs/recovery.md): the routing retry budget, and deleted activities' routes.
      routingBudget: config.routingRetryBudget,
      isDeleted: async (activityId) => (await definitions.get(activityId)) === undefined,
      pacing,
      onPaced: (activity, reason) => metrics.runPaced(activity, reason),
      cancelOn: createCancelOn({ cancellations, canceller: createRunCanceller({ client }), logger }),
      eventWaits: createEventWaits({
        eventWaits: eventWaitsRepository,
        signaller: createWaitSignaller({ client }),
        logger,
      }),
      // Debounced triggers: their events join windows here; each window's workflow starts the run.
      coalescing: { windows: coalesceWindows, starter: coalesceStarter },
    }),
  );
  const replaysRepository = createReplaysRepository(database.db);
  const replays = createReplayService({
    events,
    replays: replaysRepository,
    ingest,
    definitions,
    starter,
    logger,
    onReplayed: (mode, status) => metrics.countReplay(mode, status),
  });
  const heldEventsRepository = createHeldEventsRepository(database.db);
  const heldEvents = createHeldEventsService({
    held: heldEventsRepository,
    events,
    definitions,
    ingest,
    logger,
  });
  const deadLetters = createDeadLetterService({
    deadLetters: createDeadLettersRepository(database.db),
    events,
    ingest,
    definitions,
    logger,
  });
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

  const serverDeps = serverDepsOf({
    config,
    options,
    database,
    client,
    payloadCodec,
    metrics,
    definitions,
    runs,
    events,
    cancellations,
    eventWaitsRepository,
    scheduleManager,
    webhookCatalog,
    webhooks,
    reruns,
    replays,
    replaysRepository,
    heldEvents,
    deadLetters,
    ingest,
    dependencies,
    temporalHealthCheck,
    logger,
  });

  return {
    logger,
    database,
    connection,
    client,
    events,
    ingest,
    dependencies,
    scheduleManager,
    webhooks,
    secretBox,
    reruns,
    rerunsRepository,
    pacing,
    // Coalescing windows whose workflow ended without closing them: started again by the dispatcher.
    windowRevival: createWindowRevival({ windows: coalesceWindows, starter: coalesceStarter, logger }),
    replays,
    replaysRepository,
    heldEventsRepository,
    serverDeps,
    serverOptions: serverOptionsOf(config, options),
  };
}

export type ApiWiring = Awaited<ReturnType<typeof wireApi>>;
