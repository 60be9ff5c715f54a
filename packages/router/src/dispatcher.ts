import type { EventEnvelope, Logger } from '@activity-core/contracts';
import { isConnectionError, type EventsRepository, type PacingRepository } from '@activity-core/db';
import type { EventIngest } from './event-ingest';
import type { WindowRevival } from './window-revival';

export interface DispatcherOptions {
  events: Pick<EventsRepository, 'claimPending' | 'listRoutes'>;
  ingest: Pick<EventIngest, 'dispatch' | 'gate'>;
  logger: Logger;
  /** Poll interval when idle. @default 1000 */
  intervalMs?: number;
  /** Events claimed per round. @default 50 */
  batchSize?: number;
  /** How long a claim keeps other dispatchers away. @default 30000 */
  leaseMs?: number;
  /**
   * Events of one batch routed at the same time. A start is one round trip
   * to Temporal (and a durable write there), so a backlog left by an outage
   * drains this many times faster than one by one. @default 8
   */
  concurrency?: number;
  /** Pacing buckets: idle ones (nothing held) are deleted by the dispatcher every `pacingSweepMs`. */
  pacing?: Pick<PacingRepository, 'sweepIdle'>;
  /** @default 60000 */
  pacingSweepMs?: number;
  /** Coalescing windows whose workflow ended without closing them: started again every `windowSweepMs` (window-revival.ts). */
  windows?: Pick<WindowRevival, 'reviveOverdue'>;
  /** @default 60000 */
  windowSweepMs?: number;
}

/**
 * Routes accepted events that are still pending (Temporal was down, the
 * process died between accept and start). Any number of dispatchers may run
 * in any number of processes: claims use SKIP LOCKED and a lease, and a
 * double start is rejected by Temporal anyway.
 *
 * While Temporal is unreachable the dispatcher does not churn through the
 * backlog: it waits for the availability gate's next probe and then claims a
 * single event as that probe. Once Temporal answers, it claims full batches
 * back to back until the backlog is gone.
 *
 * While Postgres is unreachable a round fails; the dispatcher tries again
 * every `intervalMs` (logging the first failure and the recovery, not every
 * round), so a backlog starts draining within about `intervalMs` of Postgres
 * coming back. Other failures back off to five intervals.
 */
export function createDispatcher(options: DispatcherOptions) {
  const intervalMs = options.intervalMs ?? 1_000;
  const batchSize = options.batchSize ?? 50;
  const leaseMs = options.leaseMs ?? 30_000;
  const concurrency = Math.max(1, options.concurrency ?? 8);
  const { gate } = options.ingest;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = true;
  /** When the current streak of "Postgres unreachable" rounds began, if one is running. */
  let unreachableSince: number | undefined;

  /** Claims and routes one batch; returns how many events it claimed. */
  let lastSweep = 0;
  let lastWindowSweep = 0;
  async function runOnce(): Promise<number> {
    if (options.pacing !== undefined && Date.now() - lastSweep >= (options.pacingSweepMs ?? 60_000)) {
      lastSweep = Date.now();
      // Bounded per round; a table left with more idle rows is finished by the next rounds.
      const swept = await options.pacing.sweepIdle(10_000);
      if (swept > 0) options.logger.debug({ swept }, 'idle pacing buckets deleted');
    }
    if (
      options.windows !== undefined &&
      gate.healthy &&
      Date.now() - lastWindowSweep >= (options.windowSweepMs ?? 60_000)
    ) {
      lastWindowSweep = Date.now();
      await options.windows.reviveOverdue();
    }
    if (!gate.healthy && gate.retryInMs() > 0) return 0;
    const claimed = await options.events.claimPending(gate.healthy ? batchSize : 1, leaseMs);
    let next = 0;
    const lane = async (): Promise<void> => {
      for (let event = claimed[next++]; event !== undefined; event = claimed[next++]) {
        const routes = await options.events.listRoutes(event.eventId);
        await options.ingest.dispatch(event.payload as EventEnvelope, routes, event.routingAttempts, event.hops);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, claimed.length) }, lane));
    return claimed.length;
  }

  function nextDelay(claimed: number): number {
    if (!gate.healthy) return Math.max(50, Math.min(intervalMs, gate.retryInMs() || intervalMs));
    return claimed === batchSize ? 0 : intervalMs;
  }

  function schedule(delay: number): void {
    if (stopped) return;
    timer = setTimeout(() => {
      running = runOnce()
        .then((count) => {
          if (unreachableSince !== undefined) {
            options.logger.info(
              { downForMs: Date.now() - unreachableSince },
              'dispatcher reached Postgres again; draining pending routes',
            );
            unreachableSince = undefined;
          }
          schedule(nextDelay(count));
        })
        .catch((error: unknown) => {
          if (isConnectionError(error)) {
            if (unreachableSince === undefined) {
              unreachableSince = Date.now();
              options.logger.warn({ err: error }, `dispatcher cannot reach Postgres; retrying every ${intervalMs} ms`);
            }
            schedule(intervalMs);
            return;
          }
          options.logger.warn({ err: error }, 'dispatcher round failed; retrying');
          schedule(intervalMs * 5);
        });
    }, delay);
  }

  return {
    runOnce,
    start(): void {
      if (!stopped) return;
      stopped = false;
      schedule(0);
    },
    async stop(): Promise<void> {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      await running?.catch(() => undefined);
    },
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
