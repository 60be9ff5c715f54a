import type { Logger } from '@activity-core/contracts';

/**
 * The loop of a sweep that every API process runs on a timer and that works
 * in batches of single statements (the event retention purger, the held-event
 * expiry): the first run at a random moment in the first `intervalMs` (at most
 * a minute), so processes started together do not sweep together; then every
 * `intervalMs` after the previous run ended; a failed run is logged and the
 * next one tries again. `stop()` ends the loop, tells a running sweep to stop
 * after its current batch (`closing()`), and waits for it.
 */
export function createBatchedSweep(options: {
  /** One full sweep. */
  run: () => Promise<unknown>;
  logger: Logger;
  intervalMs: number;
  /** Logged (warn) when a run fails. */
  failure: string;
}) {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = true;
  let closing = false;

  function schedule(delay: number): void {
    if (stopped) return;
    timer = setTimeout(() => {
      running = options
        .run()
        .then(() => undefined)
        .catch((error: unknown) => options.logger.warn({ err: error }, options.failure))
        .finally(() => schedule(options.intervalMs));
    }, delay);
    timer.unref();
  }

  return {
    /** True once `stop()` was called: a sweep ends after its current batch. */
    closing: (): boolean => closing,
    /**
     * Repeats one batch statement until a batch comes back shorter than
     * `batchSize` (or the sweep is stopping); returns the total.
     */
    async drain(batchSize: number, batch: () => Promise<number>): Promise<number> {
      let total = 0;
      for (;;) {
        const done = await batch();
        total += done;
        if (done < batchSize || closing) return total;
      }
    },
    start(): void {
      if (!stopped) return;
      stopped = false;
      closing = false;
      schedule(Math.floor(Math.random() * Math.min(options.intervalMs, 60_000)));
    },
    async stop(): Promise<void> {
      stopped = true;
      closing = true;
      if (timer !== undefined) clearTimeout(timer);
      await running;
    },
  };
}
