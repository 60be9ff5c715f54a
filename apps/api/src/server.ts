import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance, type FastifyServerOptions, type RouteOptions } from 'fastify';
import {
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import type { ApiMetrics } from './metrics';
import { withBodiesByMediaType } from './openapi-bodies';
import { completeDocument, describeRoute } from './openapi-document';
import { registerAudit } from './plugins/audit';
import { registerLoopbackHostCheck } from './plugins/loopback-host';
import { registerAuth, type AuthOptions, type OwnershipLookup } from './plugins/auth';
import { registerErrorHandler } from './plugins/error-handler';
import { registerMethodNotAllowed } from './plugins/method-not-allowed';
import { OneLinePerRequest } from './plugins/request-log';
import { registerTracing } from './plugins/tracing';
import { createWindowCounter, registerRateLimit, type RateLimitOptions } from './plugins/rate-limit';
import { activityRoutes } from './routes/activities';
import { auditRoutes } from './routes/audit';
import { definitionHistoryRoutes } from './routes/definition-history';
import { codecRoutes, type CodecRouteOptions } from './routes/codec';
import { eventRoutes } from './routes/events';
import { healthRoutes, type ReadinessProbe } from './routes/health';
import { metricsRoutes } from './routes/metrics';
import { heldEventRoutes } from './routes/held-events';
import { replayRoutes } from './routes/replays';
import { deadLetterRoutes } from './routes/dead-letters';
import { runRoutes } from './routes/runs';
import { scheduleRoutes } from './routes/schedules';
import { webhookIngestRoutes, webhookSourceRoutes } from './routes/webhooks';
import type { ActivityService } from './services/activity-service';
import type { AuditService } from './services/audit-service';
import type { DefinitionHistoryService } from './services/definition-history-service';
import type { EventService } from './services/event-service';
import type { RunService } from './services/run-service';
import type { HeldEventsService } from './services/held-events-service';
import type { ReplayService } from './services/replay-service';
import type { DeadLetterService } from './services/dead-letter-service';
import type { ScheduleService } from './services/schedule-service';
import type { WebhookService } from './services/webhook-service';
// The product's version (bundled into the build): the document's info.version.
import productPackage from '../../../package.json' with { type: 'json' };

export interface ServerDeps {
  activities: ActivityService;
  /** Versions of activity definitions: who changed what, and when. */
  definitionHistory: DefinitionHistoryService;
  events: EventService;
  runs: RunService;
  /** Replays of accepted events, one or by filter (docs/recovery.md). */
  replays: ReplayService;
  /** The events disabled activities hold: listed, released, discarded (docs/recovery.md). */
  heldEvents: HeldEventsService;
  /** Dead letters: routes whose run could not be started, retried or discarded (docs/recovery.md). */
  deadLetters: DeadLetterService;
  schedules: ScheduleService;
  webhooks: WebhookService;
  probes: ReadinessProbe[];
  metrics: ApiMetrics;
  /** The audit log: written for every change and operator action, read at GET /v1/audit. */
  audit: AuditService;
  /** Resolves a request's activity or run to an activity name, for keys that own only some activities. */
  ownership: OwnershipLookup;
  /** The remote codec endpoint for the Temporal UI; only when payloads are encrypted. */
  codec?: CodecRouteOptions;
}

export interface ServerOptions {
  auth: AuthOptions;
  bodyLimitBytes: number;
  logger: FastifyServerOptions['logger'];
  /** Per-key request limit; `max: 0` turns it off. */
  rateLimit: RateLimitOptions;
  /** Failed bearer-key attempts per client address (AUTH_FAILURE_LIMIT); `max: 0` or absent turns it off. */
  authFailureLimit?: RateLimitOptions;
  /** Fastify's trustProxy (TRUST_PROXY): which X-Forwarded-For hops decide request.ip. @default false */
  trustProxy?: boolean | number | string[];
  /** Slow-client bounds (HTTP_*_TIMEOUT_MS): whole request, headers, idle keep-alive. */
  timeouts?: { requestMs: number; headersMs: number; keepAliveMs: number };
  /** A span per request (OTEL_*); off when absent. */
  tracing?: boolean;
  /** Sees every route as it is added, schemas included (the client's drift test reads them; production passes none). */
  onRoute?: (route: RouteOptions) => void;
}

/** Defaults of HTTP_REQUEST_TIMEOUT_MS, HTTP_HEADERS_TIMEOUT_MS and HTTP_KEEP_ALIVE_TIMEOUT_MS. */
const DEFAULT_TIMEOUTS = { requestMs: 30_000, headersMs: 10_000, keepAliveMs: 72_000 };

export async function buildServer(deps: ServerDeps, options: ServerOptions): Promise<FastifyInstance> {
  const timeouts = options.timeouts ?? DEFAULT_TIMEOUTS;
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: options.bodyLimitBytes,
    genReqId: () => crypto.randomUUID(),
    // One line per request instead of Fastify's two (plugins/request-log.ts).
    logController: new OneLinePerRequest(),
    requestIdHeader: 'x-request-id',
    // Per-address limits key on request.ip; behind a proxy it is the proxy's address unless trusted.
    // Fastify accepts a hop count at run time; its type declarations omit number.
    trustProxy: (options.trustProxy ?? false) as boolean | string[],
    // A client that never finishes its headers or body gets 408 and loses the connection.
    requestTimeout: timeouts.requestMs,
    keepAliveTimeout: timeouts.keepAliveMs,
    http: {
      headersTimeout: timeouts.headersMs,
      // Node checks the two timeouts above only this often (30 s by default), which would let them run late.
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(timeouts.headersMs / 4))),
    },
  }).withTypeProvider<ZodTypeProvider>();
  if (options.onRoute !== undefined) app.addHook('onRoute', options.onRoute);

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  // JSON only (POST /v1/events adds the CloudEvents types, webhook deliveries take any): fastify's text/plain
  // parser would hand routes a string that no route reads, answered as a confusing validation error instead of a 415.
  app.removeContentTypeParser('text/plain');
  registerErrorHandler(app);
  // Before any route is added: it indexes them all.
  registerMethodNotAllowed(app);
  // An orderly stop: close() stops accepting and closes idle keep-alive connections; a request still in flight
  // is finished and answered with `Connection: close`, so its connection ends with it instead of idling until
  // the keep-alive timeout holds the process up.
  let draining = false;
  app.addHook('preClose', async () => {
    draining = true;
  });
  app.addHook('onSend', async (_request, reply, payload) => {
    if (draining) reply.header('connection', 'close');
    return payload;
  });
  if (options.tracing === true) registerTracing(app);
  // Every answer, errors included, under its route template (bounded label values).
  app.addHook('onResponse', async (request, reply) => {
    deps.metrics.observeRequest(
      request.method,
      request.routeOptions.url ?? 'unmatched',
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
  });
  registerLoopbackHostCheck(app, { authenticationEnabled: options.auth.apiKeys.length > 0 });
  registerAuth(app, {
    ...options.auth,
    ownership: deps.ownership,
    failures: createWindowCounter(options.authFailureLimit ?? { max: 0, windowMs: 60_000 }),
  });
  registerAudit(app, { audit: deps.audit, lookup: deps.ownership });
  await registerRateLimit(app, options.rateLimit);

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'activity-core',
        version: productPackage.version,
        description:
          'Register activities, send events, watch runs. Every trigger runs exactly once. ' +
          'Errors are `application/problem+json` (RFC 9457) naming each field and rule. Text anywhere in a request that is stored ' +
          '(definitions, events, webhook sources) cannot hold U+0000, which Postgres cannot store: such a request is refused with 400. ' +
          'A method a path does not take is answered 405 with `Allow`.',
      },
      components: {
        securitySchemes: {
          apiKey: {
            type: 'http',
            scheme: 'bearer',
            description:
              'A management key (API_KEYS); `POST /v1/events` also takes an ingest key (INGEST_KEYS). ' +
              "An operation's security requirement names the least role a management key needs (API_KEY_ROLES: read < operate < write < admin; " +
              'a key without a role is admin); below it, or outside the activities a key owns (activity_prefixes), the answer is 403.',
          },
        },
      },
      security: [{ apiKey: [] }],
    },
    // Every error answer, status, header and security requirement the server has (openapi-document.ts).
    transform: describeRoute(withBodiesByMediaType(jsonSchemaTransform)),
    transformObject: completeDocument(jsonSchemaTransformObject, { version: productPackage.version }),
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { config: { auth: 'public' }, schema: { hide: true } }, async () => app.swagger());

  await app.register(healthRoutes(deps.probes));
  await app.register(metricsRoutes(deps.metrics));
  await app.register(activityRoutes(deps.activities));
  await app.register(definitionHistoryRoutes(deps.definitionHistory));
  await app.register(eventRoutes(deps.events));
  await app.register(runRoutes(deps.runs));
  await app.register(replayRoutes(deps.replays));
  await app.register(heldEventRoutes(deps.heldEvents));
  await app.register(deadLetterRoutes(deps.deadLetters));
  await app.register(scheduleRoutes(deps.schedules));
  await app.register(webhookSourceRoutes(deps.webhooks));
  await app.register(webhookIngestRoutes(deps.webhooks));
  await app.register(auditRoutes(deps.audit));
  if (deps.codec !== undefined) await app.register(codecRoutes(deps.codec));
  return app;
}
