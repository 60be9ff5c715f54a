/**
 * The background runner of bulk replays, the shape of the bulk re-run
 * runner: pages through a recorded bulk replay's selection (arrival order)
 * under a lease, replays each event through the replay service, and records
 * its progress after every page. When the process dies the lease lapses and
 * another process resumes from the recorded cursor; the page it redoes
 * starts nothing twice (`if_no_runs`: the routes already lead to runs;
 * `force`: the same `bulk-replay:{id}` key names the same replays).
 */
import { bulkReplayKey, type BulkReplayRecord, type Logger, type ReplayMode } from '@activity-core/contracts';
import type { BulkReplayRow, ReplaysRepository } from '@activity-core/db';
import { randomUUID } from 'node:crypto';
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
  const owner = randomUUID();
  const leaseMs = options.leaseMs ?? 15_000;
  const pollMs = options.pollMs ?? 1_000;
  const pageSize = options.pageSize ?? 20;
  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> | undefined;
  let holding: string | undefined;

  /** False when interrupted (Temporal or Postgres away): the caller waits for the next poll before claiming again. */
  async function carryOut(row: BulkReplayRow): Promise<boolean> {
    holding = row.id;
    const selection = options.service.selectionOf(row.filter as BulkReplayRecord['filter']);
    const mode = row.mode as ReplayMode;
    const requester = {
      actor: `${row.requestedBy ?? 'anonymous'} (bulk replay ${row.id})`,
      key: bulkReplayKey(row.id),
      bulkId: row.id,
    };
    let cursor =
      row.cursorReceivedAt === null || row.cursorEventId === null
        ? undefined
        : { receivedAt: row.cursorReceivedAt, eventId: row.cursorEventId };
    const progress = {
      processed: row.processed,
      started: row.started,
      skipped: row.skipped,
      skippedReasons: { ...(row.skippedReasons as Record<string, number>) },
    };
    try {
      while (!stopping) {
        const page = await options.replays.pageSelection(selection, cursor, pageSize);
        if (page.length === 0) {
          await options.replays.recordPage(row.id, owner, leaseMs, { cursor, ...progress, done: true });
          options.logger.info({ bulkReplayId: row.id, ...progress }, 'bulk replay completed');
          return true;
        }
        // In arrival order, one event after the other: the runs start in the order their events arrived.
        for (const event of page) {
          const answer = await options.service.replay(event.eventId, mode, requester);
          const started = answer.runs.filter(
            (run) =>
              run.status === 'started' || run.status === 'pending' || (mode === 'force' && run.status === 'duplicate'),
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
        const last = page[page.length - 1]!;
        cursor = { receivedAt: last.receivedAt, eventId: last.eventId };
        if (!(await options.replays.recordPage(row.id, owner, leaseMs, { cursor, ...progress, done: false }))) {
          options.logger.warn({ bulkReplayId: row.id }, 'bulk replay lease lost; another process carries it on');
          return true;
        }
      }
      await options.replays.releaseBulk(row.id, owner);
      return false;
    } catch (error) {
      options.logger.warn(
        { bulkReplayId: row.id, err: error },
        'bulk replay interrupted; it resumes from its last recorded page',
      );
      await options.replays.releaseBulk(row.id, owner).catch(() => undefined);
      return false;
    } finally {
      holding = undefined;
    }
  }

  async function round(): Promise<void> {
    for (;;) {
      if (stopping) return;
      const claimed = await options.replays.claimBulk(owner, leaseMs);
      if (claimed === undefined || !(await carryOut(claimed))) return;
    }
  }

  function run(): void {
    current = round()
      .catch((error: unknown) => options.logger.warn({ err: error }, 'looking for bulk replays failed; retrying'))
      .finally(() => {
        current = undefined;
        schedule();
      });
  }

  function schedule(): void {
    if (stopping) return;
    timer = setTimeout(run, pollMs);
  }

  return {
    start(): void {
      stopping = false;
      schedule();
    },
    /** Looks for work now (after a bulk replay was accepted) rather than at the next poll. */
    nudge(): void {
      if (stopping || current !== undefined) return;
      clearTimeout(timer);
      run();
    },
    /** Stops after the event in hand and gives the lease back, so another process resumes at once. */
    async stop(): Promise<void> {
      stopping = true;
      clearTimeout(timer);
      await current;
      if (holding !== undefined) await options.replays.releaseBulk(holding, owner).catch(() => undefined);
    },
  };
}

export type BulkReplayRunner = ReturnType<typeof createBulkReplayRunner>;
