/**
 * The background runner of bulk replays (bulk-job-runner.ts): pages through
 * a recorded bulk replay's selection (arrival order) under a lease, replays
 * each event through the replay service, and records its progress after
 * every page. When the process dies the lease lapses and another process
 * resumes from the recorded cursor; the page it redoes starts nothing twice
 * (`if_no_runs`: the routes already lead to runs; `force`: the same
 * `bulk-replay:{id}` key names the same replays).
 */
import { bulkReplayKey, type BulkReplayRecord, type Logger, type ReplayMode } from '@activity-core/contracts';
import type { ReplaysRepository } from '@activity-core/db';
import { createBulkJobRunner } from './bulk-job-runner';
import type { ReplayService } from './replay-service';

export interface BulkReplayRunnerOptions {
  replays: ReplaysRepository;
  service: ReplayService;
  logger: Logger;
  /** How long a claim lasts without a page recorded; another process takes over after it. @default 15000 */
  leaseMs?: number;
  /** How often an idle process looks for a bulk replay to carry out. @default 1000 */
  pollMs?: number;
  /** Events read per page (one progress write per page). @default 20 */
  pageSize?: number;
}

export function createBulkReplayRunner(options: BulkReplayRunnerOptions) {
  return createBulkJobRunner({
    store: options.replays,
    logger: options.logger,
    noun: 'bulk replay',
    idField: 'bulkReplayId',
    ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
    ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
    ...(options.pageSize === undefined ? {} : { pageSize: options.pageSize }),
    jobOf: (row) => {
      const selection = options.service.selectionOf(row.filter as BulkReplayRecord['filter']);
      const mode = row.mode as ReplayMode;
      const requester = {
        actor: `${row.requestedBy ?? 'anonymous'} (bulk replay ${row.id})`,
        key: bulkReplayKey(row.id),
        bulkId: row.id,
      };
      return {
        cursor:
          row.cursorReceivedAt === null || row.cursorEventId === null
            ? undefined
            : { receivedAt: row.cursorReceivedAt, eventId: row.cursorEventId },
        page: (cursor, size) => options.replays.pageSelection(selection, cursor, size),
        cursorAfter: (last) => ({ receivedAt: last.receivedAt, eventId: last.eventId }),
        async carryOutPage(page, progress) {
          // In arrival order, one event after the other: the runs start in the order their events arrived.
          for (const event of page) {
            if (event.payloadExpiredAt !== null) {
              // Its data is past the payload retention: nothing to replay it with (a single replay answers 410).
              progress.processed++;
              progress.skipped++;
              progress.skippedReasons.payload_expired = (progress.skippedReasons.payload_expired ?? 0) + 1;
              continue;
            }
            const answer = await options.service.replay(event.eventId, mode, requester);
            const started = answer.runs.filter(
              (run) =>
                run.status === 'started' ||
                run.status === 'pending' ||
                (mode === 'force' && run.status === 'duplicate'),
            ).length;
            progress.processed++;
            progress.started += started;
            if (started === 0) {
              const reason =
                answer.runs.length > 0 ? 'already_ran' : answer.filtered.length > 0 ? 'filtered' : 'no_match';
              progress.skipped++;
              progress.skippedReasons[reason] = (progress.skippedReasons[reason] ?? 0) + 1;
            }
          }
        },
      };
    },
  });
}

export type BulkReplayRunner = ReturnType<typeof createBulkReplayRunner>;
