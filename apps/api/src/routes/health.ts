import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';

export interface ReadinessProbe {
  name: string;
  check(): Promise<void>;
}

const Check = z.object({ status: z.enum(['ok', 'failing']), error: z.string().optional() });

export const healthRoutes = (probes: ReadinessProbe[]): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      '/healthz',
      { config: { auth: 'public' }, schema: { tags: ['health'], summary: 'The process is up', response: { 200: z.object({ status: z.literal('ok') }) } } },
      async () => ({ status: 'ok' as const }),
    );

    app.get(
      '/readyz',
      {
        config: { auth: 'public' },
        schema: {
          tags: ['health'],
          summary: 'Postgres and Temporal are reachable',
          response: { 200: z.object({ status: z.literal('ready'), checks: z.record(z.string(), Check) }), 503: z.object({ status: z.literal('not_ready'), checks: z.record(z.string(), Check) }) },
        },
      },
      async (_request, reply) => {
        const results = await Promise.all(
          probes.map(async (probe) => {
            try {
              await Promise.race([probe.check(), new Promise((_, reject) => setTimeout(() => reject(new Error('timed out after 3 s')), 3_000).unref())]);
              return [probe.name, { status: 'ok' as const }] as const;
            } catch (error) {
              return [probe.name, { status: 'failing' as const, error: (error as Error).message }] as const;
            }
          }),
        );
        const checks = Object.fromEntries(results);
        if (results.every(([, result]) => result.status === 'ok')) return { status: 'ready' as const, checks };
        return reply.status(503).send({ status: 'not_ready' as const, checks });
      },
    );
  };
