/**
 * The background runner of bulk re-runs: pages through a recorded bulk
 * re-run's selection under a lease and re-runs each original through the
 * re-run service, recording its progress after every page
 * (bulk-job-runner.ts).
 */
import { bulkRerunKey, type BulkRerunRecord, type Logger, type RerunFrom } from '@activity-core/contracts';
import type { RerunsRepository } from '@activity-core/db';
import { createBulkJobRunner } from './bulk-job-runner';
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
  const concurrency = options.concurrency ?? 4;
  return createBulkJobRunner({
    store: options.reruns,
    logger: options.logger,
    noun: 'bulk re-run',
    idField: 'bulkRerunId',
    ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
    ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
    ...(options.pageSize === undefined ? {} : { pageSize: options.pageSize }),
    jobOf: (row) => {
      const selection = options.service.selectionOf(row.filter as BulkRerunRecord['filter']);
      const from = row.fromMode as RerunFrom;
      const key = bulkRerunKey(row.id);
      return {
        cursor:
          row.cursorCreatedAt === null || row.cursorRunId === null
            ? undefined
            : { createdAt: row.cursorCreatedAt, runId: row.cursorRunId },
        page: (cursor, size) => options.reruns.pageSelection(selection, cursor, size),
        cursorAfter: (last) => ({ createdAt: last.createdAt, runId: last.runId }),
        async carryOutPage(page, progress) {
          const outcomes = await mapBounded(page, concurrency, (original) =>
            options.service.rerunOriginal(original, from, key, row.id, row.priority ?? undefined),
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
        },
      };
    },
  });
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
