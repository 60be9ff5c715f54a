import type { Logger } from '@activity-core/contracts';
import type { EventsRepository } from '@activity-core/db';

export interface EventRetentionOptions {
  events: Pick<EventsRepository, 'purgeRoutedBefore' | 'expirePayloadsBefore'>;
  logger: Logger;
  /** How long an accepted event (and so its id) is remembered; undefined: forever. */
  retentionMs?: number;
  /** How long an accepted event's data is kept; undefined: as long as the event. */
  payloadRetentionMs?: number;
  /** Time between purges. @default 600000 (10 minutes) */
  intervalMs?: number;
  /** Events removed per statement; a purge repeats until a batch comes back short. @default 1000 */
  batchSize?: number;
  /** Clock, for tests. @default () => new Date() */
  now?: () => Date;
}

/**
 * Forgets routed events older than the retention, so the events table (the
 * idempotency-key store) does not grow forever, and clears the data of those
 * older than the payload retention (their id and decision log stay). Runs in every API process:
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

  /** Repeats one batch statement until a batch comes back short; returns the total. */
  async function drain(batch: () => Promise<number>): Promise<number> {
    let total = 0;
    for (;;) {
      const done = await batch();
      total += done;
      if (done < batchSize || closing) return total;
    }
  }

  /** One full purge: data past the payload retention cleared, events past the retention forgotten; returns how many events were forgotten. */
  async function purge(): Promise<number> {
    const at = now().getTime();
    if (options.payloadRetentionMs !== undefined) {
      const cutoff = new Date(at - options.payloadRetentionMs);
      const cleared = await drain(() => options.events.expirePayloadsBefore(cutoff, batchSize));
      if (cleared > 0)
        options.logger.info(
          { cleared, cutoff: cutoff.toISOString() },
          'cleared the data of events past their payload retention',
        );
    }
    if (options.retentionMs === undefined || closing) return 0;
    const cutoff = new Date(at - options.retentionMs);
    const total = await drain(() => options.events.purgeRoutedBefore(cutoff, batchSize));
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
