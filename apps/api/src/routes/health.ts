import { classifyFailure } from '@activity-core/router';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';

export interface ReadinessProbe {
  name: string;
  check(): Promise<void>;
}

/**
 * One dependency's verdict, public: `reason` is a fixed class, never the
 * driver's message (which names hosts, ports, users). The detail is logged.
 */
const Check = z.object({
  status: z.enum(['ok', 'failing']),
  reason: z.enum(['unreachable', 'timeout', 'error']).optional(),
});

/** A probe slower than this fails as `timeout` (a load balancer's own probe timeout is usually 5 s or more). */
const PROBE_TIMEOUT_MS = 3_000;

export const healthRoutes =
  (probes: ReadinessProbe[]): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      '/healthz',
      {
        config: { auth: 'public' },
        schema: {
          tags: ['health'],
          summary: 'The process is up',
          response: { 200: z.object({ status: z.literal('ok') }) },
        },
      },
      async () => ({ status: 'ok' as const }),
    );

    app.get(
      '/readyz',
      {
        config: { auth: 'public' },
        schema: {
          tags: ['health'],
          summary: 'Postgres and Temporal are reachable',
          description:
            'Each check is `ok` or `failing` with a coarse `reason` (unreachable, timeout, error); the underlying error is in the API log.',
          response: {
            200: z.object({ status: z.literal('ready'), checks: z.record(z.string(), Check) }),
            503: z.object({ status: z.literal('not_ready'), checks: z.record(z.string(), Check) }),
          },
        },
      },
      async (request, reply) => {
        const results = await Promise.all(
          probes.map(async (probe) => {
            let timer: NodeJS.Timeout | undefined;
            try {
              await Promise.race([
                probe.check(),
                new Promise((_, reject) => {
                  timer = setTimeout(
                    () =>
                      reject(Object.assign(new Error(`timed out after ${PROBE_TIMEOUT_MS} ms`), { code: 'ETIMEDOUT' })),
                    PROBE_TIMEOUT_MS,
                  );
                }),
              ]);
              return [probe.name, { status: 'ok' as const }] as const;
            } catch (error) {
              const reason = classifyFailure(error);
              // The dependency monitor logs the error at warn when the check starts failing; per probe, debug only
              // (a load balancer probing every few seconds would otherwise repeat it all through an outage).
              request.log.debug({ err: error, check: probe.name, reason }, 'readiness check failing');
              return [probe.name, { status: 'failing' as const, reason }] as const;
            } finally {
              clearTimeout(timer);
            }
          }),
        );
        const checks = Object.fromEntries(results);
        if (results.every(([, result]) => result.status === 'ok')) return { status: 'ready' as const, checks };
        return reply.status(503).send({ status: 'not_ready' as const, checks });
      },
    );
  };
