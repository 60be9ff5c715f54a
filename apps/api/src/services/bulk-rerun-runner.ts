/**
 * The background runner of bulk re-runs: pages through a recorded bulk
 * re-run's selection under a lease and re-runs each original through the
 * re-run service, recording its progress after every page.
 */
import { bulkRerunKey, type BulkRerunRecord, type Logger, type RerunFrom } from '@activity-core/contracts';
import type { BulkRerunRow, RerunsRepository } from '@activity-core/db';
import { randomUUID } from 'node:crypto';
import type { RerunService } from './rerun-service';

export interface BulkRerunRunnerOptions {
  reruns: RerunsRepository;
  service: RerunService;
  logger: Logger;
  /** How long a claim lasts without a page recorded; another process takes over after it. @default 15000 */
  leaseMs?: number;
  /** How often an idle process looks for a bulk re-run to carry out. @default 1000 */
  pollMs?: number;
  /** Originals read per page (one progress write per page). @default 20 */
  pageSize?: number;
  /** Re-runs started at once. @default 4 */
  concurrency?: number;
}

/**
 * Carries out bulk re-runs in an API process. Any API process may take the
 * lease of a running bulk re-run; it pages through the selection, starts
 * the re-runs with bounded concurrency and records the cursor and counters
 * after each page. When the process dies, the lease lapses and another (or
 * the restarted) process resumes from the recorded cursor; the page it
 * redoes allocates the same `bulk:{id}` re-runs and starts none twice.
 */
export function createBulkRerunRunner(options: BulkRerunRunnerOptions) {
  const owner = randomUUID();
  const leaseMs = options.leaseMs ?? 15_000;
  const pollMs = options.pollMs ?? 1_000;
  const pageSize = options.pageSize ?? 20;
  const concurrency = options.concurrency ?? 4;
  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> | undefined;
  let holding: string | undefined;

  /** False when interrupted (Temporal or Postgres away): the caller waits for the next poll before claiming again. */
  async function carryOut(row: BulkRerunRow): Promise<boolean> {
    holding = row.id;
    const filter = row.filter as BulkRerunRecord['filter'];
    const selection = options.service.selectionOf(filter);
    const from = row.fromMode as RerunFrom;
    const key = bulkRerunKey(row.id);
    let cursor =
      row.cursorCreatedAt === null || row.cursorRunId === null
        ? undefined
        : { createdAt: row.cursorCreatedAt, runId: row.cursorRunId };
    const progress = {
      processed: row.processed,
      started: row.started,
      skipped: row.skipped,
      skippedReasons: { ...(row.skippedReasons as Record<string, number>) },
    };
    try {
      while (!stopping) {
        const page = await options.reruns.pageSelection(selection, cursor, pageSize);
        if (page.length === 0) {
          await options.reruns.recordPage(row.id, owner, leaseMs, { cursor, ...progress, done: true });
          options.logger.info({ bulkRerunId: row.id, ...progress }, 'bulk re-run completed');
          return true;
        }
        const outcomes = await mapBounded(page, concurrency, (original) =>
          options.service.rerunOriginal(original, from, key, row.id),
        );
        for (const outcome of outcomes) {
          progress.processed++;
          if (outcome.status === 'skipped') {
            progress.skipped++;
            progress.skippedReasons[outcome.reason] = (progress.skippedReasons[outcome.reason] ?? 0) + 1;
          } else {
            progress.started++;
          }
        }
        const last = page[page.length - 1]!;
        cursor = { createdAt: last.createdAt, runId: last.runId };
        if (!(await options.reruns.recordPage(row.id, owner, leaseMs, { cursor, ...progress, done: false }))) {
          options.logger.warn({ bulkRerunId: row.id }, 'bulk re-run lease lost; another process carries it on');
          return true;
        }
      }
      await options.reruns.releaseBulk(row.id, owner);
      return false;
    } catch (error) {
      // Temporal or Postgres away: give the lease back; a process picks it up again at the recorded cursor.
      options.logger.warn(
        { bulkRerunId: row.id, err: error },
        'bulk re-run interrupted; it resumes from its last recorded page',
      );
      await options.reruns.releaseBulk(row.id, owner).catch(() => undefined);
      return false;
    } finally {
      holding = undefined;
    }
  }

  async function round(): Promise<void> {
    for (;;) {
      if (stopping) return;
      const claimed = await options.reruns.claimBulk(owner, leaseMs);
      if (claimed === undefined || !(await carryOut(claimed))) return;
    }
  }

  function schedule(): void {
    if (stopping) return;
    timer = setTimeout(() => {
      current = round()
        .catch((error: unknown) => options.logger.warn({ err: error }, 'looking for bulk re-runs failed; retrying'))
        .finally(() => {
          current = undefined;
          schedule();
        });
    }, pollMs);
  }

  return {
    start(): void {
      stopping = false;
      schedule();
    },
    /** Looks for work now (after a bulk re-run was accepted) rather than at the next poll. */
    nudge(): void {
      if (stopping || current !== undefined) return;
      clearTimeout(timer);
      current = round()
        .catch((error: unknown) => options.logger.warn({ err: error }, 'looking for bulk re-runs failed; retrying'))
        .finally(() => {
          current = undefined;
          schedule();
        });
    },
    /** Stops after the page in hand and gives the lease back, so another process resumes at once. */
    async stop(): Promise<void> {
      stopping = true;
      clearTimeout(timer);
      await current;
      if (holding !== undefined) await options.reruns.releaseBulk(holding, owner).catch(() => undefined);
    },
  };
}

async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

export type BulkRerunRunner = ReturnType<typeof createBulkRerunRunner>;
