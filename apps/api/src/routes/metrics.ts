import { MetricsText } from '@activity-core/contracts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ApiMetrics } from '../metrics';

/** Prometheus scrape endpoint. Management keys only: it describes the whole installation. */
export const metricsRoutes =
  (metrics: ApiMetrics): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      '/metrics',
      {
        config: { auth: 'management', role: 'read' },
        schema: {
          tags: ['health'],
          summary: 'Prometheus metrics (text exposition format)',
          description:
            'Counters of this API process (requests, ingested events, routing outcomes) and gauges of the shared state read from Postgres ' +
            '(events waiting for routing, running runs, unconfirmed cron decisions). Scrape with the management key as a bearer token.',
          // Sent as text (the handler sets the exposition format's type), never serialised as JSON.
          response: {
            200: {
              description: 'The Prometheus text exposition format (version 0.0.4).',
              content: { 'text/plain': { schema: MetricsText } },
            },
          },
        },
      },
      async (_request, reply) => {
        const body = await metrics.registry.metrics();
        return reply.type(metrics.registry.contentType).send(body);
      },
    );
  };
