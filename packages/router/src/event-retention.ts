import type { Logger } from '@activity-core/contracts';
import type { EventsRepository } from '@activity-core/db';

export interface EventRetentionOptions {
  events: Pick<EventsRepository, 'purgeRoutedBefore'>;
  logger: Logger;
  /** How long an accepted event (and so its id) is remembered. */
  retentionMs: number;
  /** Time between purges. @default 600000 (10 minutes) */
  intervalMs?: number;
  /** Events removed per statement; a purge repeats until a batch comes back short. @default 1000 */
  batchSize?: number;
  /** Clock, for tests. @default () => new Date() */
  now?: () => Date;
}

/**
 * Forgets routed events older than the retention, so the events table (the
 * idempotency-key store) does not grow forever. Runs in every API process:
 * purgers skip rows another purger holds, so several never fight or
 * delete twice, and a process that dies mid-purge leaves nothing half done
 * (each batch is one statement).
 */
export function createEventRetention(options: EventRetentionOptions) {
  const intervalMs = options.intervalMs ?? 600_000;
  const batchSize = options.batchSize ?? 1_000;
  const now = options.now ?? (() => new Date());
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = true;
  let closing = false;

  /** One full purge; returns how many events were forgotten. */
  async function purge(): Promise<number> {
    const cutoff = new Date(now().getTime() - options.retentionMs);
    let total = 0;
    for (;;) {
      const removed = await options.events.purgeRoutedBefore(cutoff, batchSize);
      total += removed;
      if (removed < batchSize || closing) break;
    }
    if (total > 0)
      options.logger.info({ removed: total, cutoff: cutoff.toISOString() }, 'forgot events past their retention');
    return total;
  }

  function schedule(delay: number): void {
    if (stopped) return;
    timer = setTimeout(() => {
      running = purge()
        .then(() => undefined)
        .catch((error: unknown) =>
          options.logger.warn({ err: error }, 'event retention purge failed; retrying next interval'),
        )
        .finally(() => schedule(intervalMs));
    }, delay);
    timer.unref();
  }

  return {
    purge,
    start(): void {
      if (!stopped) return;
      stopped = false;
      closing = false;
      // Not at once: many processes starting together should not all purge together.
      schedule(Math.floor(Math.random() * Math.min(intervalMs, 60_000)));
    },
    async stop(): Promise<void> {
      stopped = true;
      closing = true;
      if (timer !== undefined) clearTimeout(timer);
      await running;
    },
  };
}

export type EventRetention = ReturnType<typeof createEventRetention>;
