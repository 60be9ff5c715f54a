/**
 * The one way a bulk job (a bulk re-run, a bulk replay) is carried out in
 * the background: an API process claims a running job under a lease, pages
 * through its selection, carries out each page and records the cursor and
 * counters after it. When the process dies the lease lapses and another (or
 * the restarted) process resumes from the recorded cursor; each kind of job
 * makes its redone page start nothing twice (deterministic ids and keys).
 */
import type { Logger } from '@activity-core/contracts';
import { randomUUID } from 'node:crypto';

/** A job's counters, recorded after every page. */
export interface BulkProgress {
  processed: number;
  started: number;
  skipped: number;
  skippedReasons: Record<string, number>;
}

/** A job's table: a lease per job, progress recorded per page under it. */
export interface BulkJobStore<Row, Cursor> {
  claimBulk(owner: string, leaseMs: number): Promise<Row | undefined>;
  /** False when the lease was lost (another process carries the job on). */
  recordPage(
    id: string,
    owner: string,
    leaseMs: number,
    page: BulkProgress & { cursor: Cursor | undefined; done: boolean },
  ): Promise<boolean>;
  releaseBulk(id: string, owner: string): Promise<void>;
}

/** What one claimed job does: where it stands, how it reads a page, how it carries a page out. */
export interface BulkJob<Item, Cursor> {
  cursor: Cursor | undefined;
  page(cursor: Cursor | undefined, size: number): Promise<Item[]>;
  /** Carries out one page, counting what it did in `progress`. */
  carryOutPage(page: Item[], progress: BulkProgress): Promise<void>;
  cursorAfter(last: Item): Cursor;
}

type BulkRow = { id: string; processed: number; started: number; skipped: number; skippedReasons: unknown };

export function createBulkJobRunner<Row extends BulkRow, Item, Cursor>(options: {
  store: BulkJobStore<Row, Cursor>;
  jobOf: (row: Row) => BulkJob<Item, Cursor>;
  logger: Logger;
  /** How the job is named in logs: `bulk re-run`, `bulk replay`; and the log field of its id. */
  noun: string;
  idField: string;
  /** How long a claim lasts without a page recorded; another process takes over after it. @default 15000 */
  leaseMs?: number;
  /** How often an idle process looks for a job to carry out. @default 1000 */
  pollMs?: number;
  /** Items read per page (one progress write per page). @default 20 */
  pageSize?: number;
}) {
  const { store, logger, noun, idField } = options;
  const owner = randomUUID();
  const leaseMs = options.leaseMs ?? 15_000;
  const pollMs = options.pollMs ?? 1_000;
  const pageSize = options.pageSize ?? 20;
  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> | undefined;
  let holding: string | undefined;

  /** False when interrupted (Temporal or Postgres away): the caller waits for the next poll before claiming again. */
  async function carryOut(row: Row): Promise<boolean> {
    holding = row.id;
    const job = options.jobOf(row);
    let cursor = job.cursor;
    const progress: BulkProgress = {
      processed: row.processed,
      started: row.started,
      skipped: row.skipped,
      skippedReasons: { ...(row.skippedReasons as Record<string, number>) },
    };
    try {
      while (!stopping) {
        const page = await job.page(cursor, pageSize);
        if (page.length === 0) {
          await store.recordPage(row.id, owner, leaseMs, { cursor, ...progress, done: true });
          logger.info({ [idField]: row.id, ...progress }, `${noun} completed`);
          return true;
        }
        await job.carryOutPage(page, progress);
        cursor = job.cursorAfter(page[page.length - 1]!);
        if (!(await store.recordPage(row.id, owner, leaseMs, { cursor, ...progress, done: false }))) {
          logger.warn({ [idField]: row.id }, `${noun} lease lost; another process carries it on`);
          return true;
        }
      }
      await store.releaseBulk(row.id, owner);
      return false;
    } catch (error) {
      // Temporal or Postgres away: give the lease back; a process picks it up again at the recorded cursor.
      logger.warn({ [idField]: row.id, err: error }, `${noun} interrupted; it resumes from its last recorded page`);
      await store.releaseBulk(row.id, owner).catch(() => undefined);
      return false;
    } finally {
      holding = undefined;
    }
  }

  async function round(): Promise<void> {
    for (;;) {
      if (stopping) return;
      const claimed = await store.claimBulk(owner, leaseMs);
      if (claimed === undefined || !(await carryOut(claimed))) return;
    }
  }

  function run(): void {
    current = round()
      .catch((error: unknown) => logger.warn({ err: error }, `looking for ${noun}s failed; retrying`))
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
    /** Looks for work now (after a job was accepted) rather than at the next poll. */
    nudge(): void {
      if (stopping || current !== undefined) return;
      clearTimeout(timer);
      run();
    },
    /** Stops after the page in hand and gives the lease back, so another process resumes at once. */
    async stop(): Promise<void> {
      stopping = true;
      clearTimeout(timer);
      await current;
      if (holding !== undefined) await store.releaseBulk(holding, owner).catch(() => undefined);
    },
  };
}
