import type { Logger } from '@activity-core/contracts';
import type { HeldEventsRepository } from '@activity-core/db';
import { createBatchedSweep } from './batched-sweep';

export interface HeldExpiryOptions {
  held: Pick<HeldEventsRepository, 'expireDue'>;
  logger: Logger;
  /** Time between sweeps. @default 60000 */
  intervalMs?: number;
  /** Routes expired per statement; a sweep repeats until a batch comes back short. @default 1000 */
  batchSize?: number;
}

/**
 * Records held events whose hold ran out as `expired` (docs/recovery.md,
 * "Held events"): the route stays, with its outcome and when, until the
 * event's retention. Runs in every API process: sweepers skip rows another
 * sweeper (or a release) holds, so several never fight or expire twice, and
 * each batch is one statement.
 */
export function createHeldExpiry(options: HeldExpiryOptions) {
  const batchSize = options.batchSize ?? 1_000;
  const loop = createBatchedSweep({
    run: () => sweep(),
    logger: options.logger,
    intervalMs: options.intervalMs ?? 60_000,
    failure: 'held event expiry failed; retrying next interval',
  });

  /** One full sweep; returns how many held events were recorded expired. */
  async function sweep(): Promise<number> {
    const total = await loop.drain(batchSize, async () => (await options.held.expireDue(batchSize)).length);
    if (total > 0) options.logger.info({ expired: total }, 'held events past their hold recorded expired');
    return total;
  }

  return { sweep, start: loop.start, stop: loop.stop };
}

export type HeldExpiry = ReturnType<typeof createHeldExpiry>;
