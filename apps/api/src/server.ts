import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import {
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import type { ApiMetrics } from './metrics';
import { registerAuth, type AuthOptions } from './plugins/auth';
import { registerErrorHandler } from './plugins/error-handler';
import { registerRateLimit, type RateLimitOptions } from './plugins/rate-limit';
import { activityRoutes } from './routes/activities';
import { eventRoutes } from './routes/events';
import { healthRoutes, type ReadinessProbe } from './routes/health';
import { metricsRoutes } from './routes/metrics';
import { runRoutes } from './routes/runs';
import { scheduleRoutes } from './routes/schedules';
import { webhookIngestRoutes, webhookSourceRoutes } from './routes/webhooks';
import type { ActivityService } from './services/activity-service';
import type { EventService } from './services/event-service';
import type { RunService } from './services/run-service';
import type { ScheduleService } from './services/schedule-service';
import type { WebhookService } from './services/webhook-service';

export interface ServerDeps {
  activities: ActivityService;
  events: EventService;
  runs: RunService;
  schedules: ScheduleService;
  webhooks: WebhookService;
  probes: ReadinessProbe[];
  metrics: ApiMetrics;
}

export interface ServerOptions {
  auth: AuthOptions;
  bodyLimitBytes: number;
  logger: FastifyServerOptions['logger'];
  /** Per-key request limit; `max: 0` turns it off. */
  rateLimit: RateLimitOptions;
}

export async function buildServer(deps: ServerDeps, options: ServerOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: options.bodyLimitBytes,
    genReqId: () => crypto.randomUUID(),
    requestIdHeader: 'x-request-id',
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandler(app);
  // Every answer, errors included, under its route template (bounded label values).
  app.addHook('onResponse', async (request, reply) => {
    deps.metrics.observeRequest(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
  });
  registerAuth(app, options.auth);
  await registerRateLimit(app, options.rateLimit);

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'activity-core',
        version: '1.0.0',
        description: 'Register activities, send events, watch runs. Every trigger runs exactly once.',
      },
      components: { securitySchemes: { apiKey: { type: 'http', scheme: 'bearer' } } },
      security: [{ apiKey: [] }],
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { config: { auth: 'public' }, schema: { hide: true } }, async () => app.swagger());

  await app.register(healthRoutes(deps.probes));
  await app.register(metricsRoutes(deps.metrics));
  await app.register(activityRoutes(deps.activities));
  await app.register(eventRoutes(deps.events));
  await app.register(runRoutes(deps.runs));
  await app.register(scheduleRoutes(deps.schedules));
  await app.register(webhookSourceRoutes(deps.webhooks));
  await app.register(webhookIngestRoutes(deps.webhooks));
  return app;
}
