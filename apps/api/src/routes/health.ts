import { Liveness, NotReady, Ready, type ReadinessCheck } from '@activity-core/contracts';
import { classifyFailure } from '@activity-core/router';
import type { FastifyBaseLogger } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';

export interface ReadinessProbe {
  name: string;
  check(): Promise<void>;
}

/** A probe slower than this fails as `timeout` (a load balancer's own probe timeout is usually 5 s or more). */
const PROBE_TIMEOUT_MS = 3_000;

type CheckResult = ReadinessCheck;
type ProbeResults = ReadonlyArray<readonly [string, CheckResult]>;

/** How long a readiness answer is reused: a load balancer probes every few seconds, an attacker as often as it likes. */
export const READINESS_CACHE_MS = 1_000;

async function runProbes(
  probes: readonly ReadinessProbe[],
  log: Pick<FastifyBaseLogger, 'debug'>,
): Promise<ProbeResults> {
  return await Promise.all(
    probes.map(async (probe) => {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          probe.check(),
          new Promise((_, reject) => {
            timer = setTimeout(
              () => reject(Object.assign(new Error(`timed out after ${PROBE_TIMEOUT_MS} ms`), { code: 'ETIMEDOUT' })),
              PROBE_TIMEOUT_MS,
            );
          }),
        ]);
        return [probe.name, { status: 'ok' as const }] as const;
      } catch (error) {
        const reason = classifyFailure(error);
        // The dependency monitor logs the error at warn when the check starts failing; per probe, debug only
        // (a load balancer probing every few seconds would otherwise repeat it all through an outage).
        log.debug({ err: error, check: probe.name, reason }, 'readiness check failing');
        return [probe.name, { status: 'failing' as const, reason }] as const;
      } finally {
        clearTimeout(timer);
      }
    }),
  );
}

/**
 * Each probe is a database query and a Temporal call, and /readyz needs no
 * key: callers share one check in flight, and its answer is reused for
 * `cacheMs` after it ends, so any rate of hits costs at most one check a
 * period.
 */
export function createReadiness(
  probes: readonly ReadinessProbe[],
  options: { cacheMs?: number; now?: () => number } = {},
): (log: Pick<FastifyBaseLogger, 'debug'>) => Promise<ProbeResults> {
  const cacheMs = options.cacheMs ?? READINESS_CACHE_MS;
  const now = options.now ?? Date.now;
  let inFlight: Promise<ProbeResults> | undefined;
  let last: { results: ProbeResults; at: number } | undefined;
  return async (log) => {
    if (last !== undefined && now() - last.at < cacheMs) return last.results;
    inFlight ??= runProbes(probes, log).then(
      (results) => {
        last = { results, at: now() };
        inFlight = undefined;
        return results;
      },
      (error: unknown) => {
        inFlight = undefined;
        throw error;
      },
    );
    return await inFlight;
  };
}

export const healthRoutes =
  (probes: ReadinessProbe[], options: { cacheMs?: number; now?: () => number } = {}): FastifyPluginAsyncZod =>
  async (app) => {
    const readiness = createReadiness(probes, options);
    app.get(
      '/healthz',
      {
        config: { auth: 'public' },
        schema: {
          tags: ['health'],
          summary: 'The process is up',
          response: { 200: Liveness },
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
            200: Ready,
            503: NotReady,
          },
        },
      },
      async (request, reply) => {
        const results = await readiness(request.log);
        const checks = Object.fromEntries(results);
        if (results.every(([, result]) => result.status === 'ok')) return { status: 'ready' as const, checks };
        return reply.status(503).send({ status: 'not_ready' as const, checks });
      },
    );
  };
