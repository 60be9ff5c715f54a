import type { Logger } from '@activity-core/contracts';
import type { HeldEventsRepository } from '@activity-core/db';

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
  const intervalMs = options.intervalMs ?? 60_000;
  const batchSize = options.batchSize ?? 1_000;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = true;
  let closing = false;

  /** One full sweep; returns how many held events were recorded expired. */
  async function sweep(): Promise<number> {
    let total = 0;
    for (;;) {
      const expired = await options.held.expireDue(batchSize);
      total += expired.length;
      if (expired.length < batchSize || closing) break;
    }
    if (total > 0) options.logger.info({ expired: total }, 'held events past their hold recorded expired');
    return total;
  }

  function schedule(delay: number): void {
    if (stopped) return;
    timer = setTimeout(() => {
      running = sweep()
        .then(() => undefined)
        .catch((error: unknown) =>
          options.logger.warn({ err: error }, 'held event expiry failed; retrying next interval'),
        )
        .finally(() => schedule(intervalMs));
    }, delay);
    timer.unref();
  }

  return {
    sweep,
    start(): void {
      if (!stopped) return;
      stopped = false;
      closing = false;
      // Not at once: many processes starting together should not all sweep together.
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

export type HeldExpiry = ReturnType<typeof createHeldExpiry>;
