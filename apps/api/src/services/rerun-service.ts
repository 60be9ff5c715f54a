import {
  bulkRerunId,
  bulkRerunKey,
  ConflictError,
  formatScheduledFor,
  InvalidInputError,
  MAX_BULK_RERUN_RANGE_DAYS,
  MAX_BULK_RERUN_RUNS,
  NotFoundError,
  parseIdempotencyKey,
  rerunWorkflowId,
  runIdFor,
  UnavailableError,
  type ActivityDefinition,
  type BulkRerunDryRun,
  type BulkRerunRecord,
  type BulkRerunRequest,
  type EventEnvelope,
  type Logger,
  type RerunFrom,
  type RerunLink,
  type RerunResponse,
  type RunResume,
  type RunTrigger,
} from '@activity-core/contracts';
import type {
  BulkRerunRow,
  DefinitionsRepository,
  RerunRow,
  RerunSelection,
  RerunsRepository,
  RerunWithStatus,
  RunRow,
  RunsRepository,
} from '@activity-core/db';
import { isTemporalUnreachable, type RunStarter } from '@activity-core/temporal/client';
import { randomUUID } from 'node:crypto';

/** Statuses of a run that has not ended: it cannot be re-run yet. */
const IN_PROGRESS = new Set<string>(['running', 'waiting_for_slot']);

/** How long one re-run start waits for Temporal. */
const START_DEADLINE_MS = 10_000;

/** A re-run of the run named in a request: the first run of its trigger, and the run whose results it reuses. */
interface Resolved {
  original: RunRow;
  source: RunRow;
}

export interface RerunDeps {
  runs: RunsRepository;
  reruns: RerunsRepository;
  definitions: DefinitionsRepository;
  starter: RunStarter;
  logger: Logger;
}

function readKey(header: string | undefined): { key: string; generated: boolean } {
  if (header === undefined) return { key: randomUUID(), generated: true };
  const key = parseIdempotencyKey(header);
  if (key === '')
    throw new InvalidInputError('Idempotency-Key is empty', [
      { path: 'headers.idempotency-key', message: 'must not be empty' },
    ]);
  return { key, generated: false };
}

function taskIndexOf(error: unknown): number | undefined {
  const index = (error as { task_index?: unknown } | null)?.task_index;
  return typeof index === 'number' && Number.isInteger(index) && index >= 0 ? index : undefined;
}

/**
 * Re-runs: one run again (from the start or from its failed task), the runs a
 * filter selects (bulk, with a durable progress record), and the failed fire
 * times of a backfill. Every re-run is `rerun-{original run_id}:{attempt}`,
 * allocated in `run_reruns` under an Idempotency-Key before it is started.
 */
export function createRerunService(deps: RerunDeps) {
  let bulkAccepted: (() => void) | undefined;
  async function requireRun(runId: string): Promise<RunRow> {
    const row = await deps.runs.getRun(runId);
    if (row === undefined) throw new NotFoundError('run', runId);
    return row;
  }

  async function resolve(runId: string): Promise<Resolved> {
    const source = await requireRun(runId);
    const link = await deps.reruns.getRerun(runId);
    const original = link === undefined ? source : await requireRun(link.rerunOf);
    return { original, source };
  }

  /** The definition version and trigger the original ran with: a re-run repeats them exactly. */
  async function inputOf(original: RunRow): Promise<{
    activity: { id: string; name: string; version: number; definition: ActivityDefinition };
    trigger: RunTrigger;
  }> {
    const version = await deps.definitions.getVersion(original.activityId, original.activityVersion);
    if (version === undefined)
      throw new ConflictError(
        `run ${original.runId} cannot be re-run: version ${original.activityVersion} of activity ${original.activityId} is no longer stored`,
      );
    const activity = { id: version.id, name: version.name, version: version.version, definition: version.definition };
    switch (original.triggerType) {
      case 'event': {
        const stored = original.eventId === null ? undefined : await deps.reruns.storedEvent(original.eventId);
        if (stored === undefined)
          throw new ConflictError(
            `run ${original.runId} cannot be re-run: its event ${original.eventId ?? '(none)'} is no longer stored`,
          );
        return {
          activity,
          trigger: {
            type: 'event',
            event: stored.envelope as EventEnvelope,
            ...(stored.hops > 0 ? { hops: stored.hops } : {}),
          },
        };
      }
      case 'cron':
      case 'backfill': {
        if (original.scheduledFor === null)
          throw new ConflictError(`run ${original.runId} cannot be re-run: it has no recorded fire time`);
        const scheduledFor = formatScheduledFor(original.scheduledFor);
        return {
          activity,
          trigger: {
            type: original.triggerType,
            scheduled_for: scheduledFor,
            window_start: original.windowStart === null ? scheduledFor : formatScheduledFor(original.windowStart),
            window_end: scheduledFor,
          },
        };
      }
      default: {
        const prefix = `manual-${original.activityId}:`;
        const key = original.workflowId.startsWith(prefix)
          ? original.workflowId.slice(prefix.length)
          : original.workflowId;
        return { activity, trigger: { type: 'manual', key, requested_at: original.startedAt.toISOString() } };
      }
    }
  }

  /** Where a re-run from the failed task begins, and the recorded outcomes of the tasks before it. */
  async function resumeFrom(source: RunRow, taskCount: number): Promise<RunResume> {
    const link = await deps.reruns.getRerun(source.runId);
    const outcomes = new Map<number, RunResume['prior'][number]>();
    // A source that was itself resumed did not execute its earliest tasks: their outcomes are in its input.
    for (const entry of ((link?.resume as RunResume | null) ?? { prior: [] }).prior) outcomes.set(entry.index, entry);
    for (const task of await deps.runs.listTasks(source.runId)) {
      if (task.status === 'succeeded' || task.status === 'failed') {
        outcomes.set(task.taskIndex, {
          index: task.taskIndex,
          type: task.taskType,
          workflow_id: task.workflowId,
          status: task.status,
          ...(task.result === null ? {} : { result: task.result }),
        });
      }
    }
    let fromIndex = taskIndexOf(source.error);
    if (fromIndex === undefined) {
      fromIndex = 0;
      while (fromIndex < taskCount && outcomes.get(fromIndex)?.status === 'succeeded') fromIndex++;
    }
    if (fromIndex >= taskCount)
      throw new ConflictError(`run ${source.runId} has no failed task to re-run from; re-run it from the start`);
    const prior: RunResume['prior'] = [];
    for (let index = 0; index < fromIndex; index++) {
      const outcome = outcomes.get(index);
      if (outcome === undefined)
        throw new ConflictError(
          `run ${source.runId} cannot be re-run from task ${fromIndex}: task ${index} has no recorded outcome`,
        );
      prior.push(outcome);
    }
    return { from_index: fromIndex, prior };
  }

  async function start(row: RerunRow, original: RunRow): Promise<'started' | 'duplicate'> {
    const { activity, trigger } = await inputOf(original);
    const resume = (row.resume as RunResume | null) ?? undefined;
    try {
      return await deps.starter.start(
        {
          workflowId: row.workflowId,
          activity,
          trigger,
          rerun: { of: row.rerunOf, attempt: row.attempt },
          ...(resume === undefined ? {} : { resume }),
        },
        { deadline: new Date(Date.now() + START_DEADLINE_MS) },
      );
    } catch (error) {
      if (isTemporalUnreachable(error)) {
        throw new UnavailableError(
          `Temporal is unreachable; re-run ${row.workflowId} is recorded and starts when the request is repeated with the same Idempotency-Key`,
        );
      }
      throw error;
    }
  }

  /** Allocates (or finds) the re-run under `key` and starts it; starting an already started one is `duplicate`. */
  async function rerunUnderKey(
    resolved: Resolved,
    from: RerunFrom,
    key: string,
    bulkId: string | null,
  ): Promise<{ row: RerunRow; status: 'started' | 'duplicate' }> {
    const { original, source } = resolved;
    let row = await deps.reruns.findByKey(original.runId, key);
    if (row === undefined) {
      if (IN_PROGRESS.has(source.status))
        throw new ConflictError(
          `run ${source.runId} is still running; cancel it or wait for it to end before re-running it`,
        );
      const { activity } = await inputOf(original);
      const resume = from === 'failed_task' ? await resumeFrom(source, activity.definition.tasks.length) : undefined;
      ({ row } = await deps.reruns.allocate(original.runId, key, (attempt) => {
        const workflowId = rerunWorkflowId(original.runId, attempt);
        return {
          runId: runIdFor(workflowId),
          workflowId,
          sourceRunId: source.runId,
          fromTaskIndex: resume?.from_index ?? 0,
          resume: resume ?? null,
          bulkRerunId: bulkId,
        };
      }));
    }
    const status = await start(row, original);
    deps.logger.info({ rerunOf: row.rerunOf, workflowId: row.workflowId, status }, 're-run requested');
    return { row, status };
  }

  /** Why an original is left out of a bulk re-run or backfill (a re-run of it is under way or succeeded), or undefined. */
  async function activeRerun(originalRunId: string, exceptKey: string): Promise<RerunWithStatus | undefined> {
    const chain = await deps.reruns.listChain(originalRunId);
    return chain.find(
      (entry) =>
        entry.idempotencyKey !== exceptKey &&
        (entry.status === 'pending' || entry.status === 'succeeded' || IN_PROGRESS.has(entry.status)),
    );
  }

  function toResponse(
    row: RerunRow,
    status: 'started' | 'duplicate',
    key: { key: string; generated: boolean },
  ): RerunResponse {
    return {
      run_id: row.runId,
      workflow_id: row.workflowId,
      rerun_of: row.rerunOf,
      attempt: row.attempt,
      source_run_id: row.sourceRunId,
      from: row.resume === null ? 'start' : 'failed_task',
      from_task_index: row.fromTaskIndex,
      key: key.key,
      key_generated: key.generated,
      status,
    };
  }

  function toBulkRecord(row: BulkRerunRow): BulkRerunRecord {
    const filter = row.filter as BulkRerunRecord['filter'];
    return {
      id: row.id,
      dry_run: false,
      filter,
      from: row.fromMode as RerunFrom,
      status: row.status as BulkRerunRecord['status'],
      total: row.total,
      processed: row.processed,
      started: row.started,
      skipped: row.skipped,
      skipped_reasons: row.skippedReasons as Record<string, number>,
      created_at: row.createdAt.toISOString(),
      updated_at: row.updatedAt.toISOString(),
      completed_at: row.completedAt === null ? null : row.completedAt.toISOString(),
    };
  }

  function selectionOf(filter: BulkRerunRecord['filter']): RerunSelection {
    return {
      status: filter.status,
      from: new Date(filter.from),
      to: new Date(filter.to),
      ...(filter.activity_id === null ? {} : { activityId: filter.activity_id }),
      ...(filter.trigger_type === null ? {} : { triggerType: filter.trigger_type }),
    };
  }

  return {
    /** `POST /v1/runs/{run_id}/rerun`. */
    async rerun(runId: string, from: RerunFrom, header: string | undefined): Promise<RerunResponse> {
      const key = readKey(header);
      const resolved = await resolve(runId);
      const { row, status } = await rerunUnderKey(resolved, from, key.key, null);
      return toResponse(row, status, key);
    },

    /** The re-run fields of `GET /v1/runs/{run_id}`: what it re-runs, and the whole chain of its original. */
    async chainOf(
      run: RunRow,
    ): Promise<{ rerun_of: string | null; rerun_attempt: number | null; reruns: RerunLink[] }> {
      const link = await deps.reruns.getRerun(run.runId);
      const originalId = link?.rerunOf ?? run.runId;
      const chain = await deps.reruns.listChain(originalId);
      return {
        rerun_of: link?.rerunOf ?? null,
        rerun_attempt: link?.attempt ?? null,
        reruns: chain.map((entry) => ({
          run_id: entry.runId,
          workflow_id: entry.workflowId,
          attempt: entry.attempt,
          source_run_id: entry.sourceRunId,
          from_task_index: entry.fromTaskIndex,
          status: entry.status,
          bulk_rerun_id: entry.bulkRerunId,
          requested_at: entry.requestedAt.toISOString(),
        })),
      };
    },

    /** `POST /v1/runs/rerun`: counts (dry run) or records a bulk re-run, which the runner carries out. */
    async bulk(
      request: BulkRerunRequest,
      header: string | undefined,
      now: Date = new Date(),
    ): Promise<BulkRerunDryRun | BulkRerunRecord> {
      const { filter } = request;
      const from = new Date(filter.from);
      // Runs cannot be created in the future; the selection ends now at the latest, so it cannot grow later.
      const to = new Date(Math.min(new Date(filter.to).getTime(), now.getTime()));
      if (to.getTime() <= from.getTime()) {
        throw new InvalidInputError('filter.to must be after filter.from (and filter.from in the past)', [
          { path: 'filter.to', message: 'must be after filter.from' },
        ]);
      }
      if (to.getTime() - from.getTime() > MAX_BULK_RERUN_RANGE_DAYS * 86_400_000) {
        throw new InvalidInputError(`filter spans more than ${MAX_BULK_RERUN_RANGE_DAYS} days`, [
          { path: 'filter.to', message: `must be at most ${MAX_BULK_RERUN_RANGE_DAYS} days after filter.from` },
        ]);
      }
      const stored: BulkRerunRecord['filter'] = {
        activity_id: filter.activity_id ?? null,
        status: filter.status,
        trigger_type: filter.trigger_type ?? null,
        from: from.toISOString(),
        to: to.toISOString(),
      };
      const key = header === undefined ? undefined : readKey(header).key;
      if (key !== undefined && !request.dry_run) {
        // The same request again (same Idempotency-Key) answers the bulk re-run it started.
        const existing = await deps.reruns.getBulk(bulkRerunId(key));
        if (existing !== undefined) return toBulkRecord(existing);
      }
      const total = await deps.reruns.countSelection(selectionOf(stored));
      if (request.dry_run) return { dry_run: true, total };
      if (total > MAX_BULK_RERUN_RUNS) {
        throw new InvalidInputError(
          `the filter selects ${total} runs; one bulk re-run takes at most ${MAX_BULK_RERUN_RUNS}`,
          [
            {
              path: 'filter',
              message: `selects ${total} runs, more than ${MAX_BULK_RERUN_RUNS}: narrow it or split the time range`,
            },
          ],
        );
      }
      const { row, created } = await deps.reruns.createBulk({
        id: bulkRerunId(key),
        filter: stored,
        fromMode: request.from,
        total,
      });
      if (created) bulkAccepted?.();
      return toBulkRecord(row);
    },

    async getBulk(id: string): Promise<BulkRerunRecord> {
      const row = await deps.reruns.getBulk(id);
      if (row === undefined) throw new NotFoundError('bulk re-run', id);
      return toBulkRecord(row);
    },

    /**
     * One original of a bulk re-run (or a backfill): re-run under `key`
     * unless another re-run of it is under way or succeeded. `skipped`
     * carries the reason.
     */
    async rerunOriginal(
      original: RunRow,
      from: RerunFrom,
      key: string,
      bulkId: string | null,
    ): Promise<
      { status: 'started' | 'duplicate'; row: RerunRow } | { status: 'skipped'; reason: string; detail: string }
    > {
      const active = await activeRerun(original.runId, key);
      if (active !== undefined)
        return {
          status: 'skipped',
          reason: 'rerun_active',
          detail: `re-run ${active.workflowId} is ${active.status === 'succeeded' ? 'succeeded' : 'under way'}`,
        };
      try {
        return await rerunUnderKey({ original, source: original }, from, key, bulkId);
      } catch (error) {
        if (error instanceof ConflictError)
          return { status: 'skipped', reason: 'not_rerunnable', detail: error.message };
        throw error;
      }
    },

    selectionOf,

    /** Called once per bulk re-run accepted by this process (the runner looks for work at once). */
    onBulkAccepted(listener: () => void): void {
      bulkAccepted = listener;
    },
  };
}

export type RerunService = ReturnType<typeof createRerunService>;

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
