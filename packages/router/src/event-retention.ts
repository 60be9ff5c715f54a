import type { Logger } from '@activity-core/contracts';
import type { EventsRepository } from '@activity-core/db';
import { createBatchedSweep } from './batched-sweep';

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
  const batchSize = options.batchSize ?? 1_000;
  const now = options.now ?? (() => new Date());
  const loop = createBatchedSweep({
    run: () => purge(),
    logger: options.logger,
    intervalMs: options.intervalMs ?? 600_000,
    failure: 'event retention purge failed; retrying next interval',
  });

  /** One full purge: data past the payload retention cleared, events past the retention forgotten; returns how many events were forgotten. */
  async function purge(): Promise<number> {
    const at = now().getTime();
    if (options.payloadRetentionMs !== undefined) {
      const cutoff = new Date(at - options.payloadRetentionMs);
      const cleared = await loop.drain(batchSize, () => options.events.expirePayloadsBefore(cutoff, batchSize));
      if (cleared > 0)
        options.logger.info(
          { cleared, cutoff: cutoff.toISOString() },
          'cleared the data of events past their payload retention',
        );
    }
    if (options.retentionMs === undefined || loop.closing()) return 0;
    const cutoff = new Date(at - options.retentionMs);
    const total = await loop.drain(batchSize, () => options.events.purgeRoutedBefore(cutoff, batchSize));
    if (total > 0)
      options.logger.info({ removed: total, cutoff: cutoff.toISOString() }, 'forgot events past their retention');
    return total;
  }

  return { purge, start: loop.start, stop: loop.stop };
}

export type EventRetention = ReturnType<typeof createEventRetention>;
