import {
  bulkRerunId,
  ConflictError,
  InvalidInputError,
  MAX_BULK_RERUN_RANGE_DAYS,
  MAX_BULK_RERUN_RUNS,
  NotFoundError,
  parseIdempotencyKey,
  rerunWorkflowId,
  runIdFor,
  UnavailableError,
  type BulkRerunDryRun,
  type BulkRerunRecord,
  type BulkRerunRequest,
  type Logger,
  type RerunFrom,
  type RerunLink,
  type RerunResponse,
  type RunResume,
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
import { createRerunInput } from './rerun-input';

/** What a re-run request did: started the re-run, or found it started already (the same Idempotency-Key). */
export type RerunOutcome = { kind: 'started' | 'duplicate'; answer: RerunResponse };

/** What a bulk re-run request did: counted the selection (a dry run), or recorded the bulk re-run the runner carries out. */
export type BulkRerunOutcome =
  { kind: 'counted'; answer: BulkRerunDryRun } | { kind: 'recorded'; answer: BulkRerunRecord };

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

/**
 * Re-runs: one run again (from the start or from its failed task), the runs a
 * filter selects (bulk, with a durable progress record), and the failed fire
 * times of a backfill. Every re-run is `rerun-{original run_id}:{attempt}`,
 * allocated in `run_reruns` under an Idempotency-Key before it is started.
 */
export function createRerunService(deps: RerunDeps) {
  const { inputOf, resumeFrom } = createRerunInput(deps);
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
          // The priority the first request under this key named; a repeated request starts it with the same one.
          ...(row.priority === null ? {} : { priority: row.priority }),
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
    priority: number | undefined,
  ): Promise<{ row: RerunRow; status: 'started' | 'duplicate' }> {
    const { original, source } = resolved;
    let row = await deps.reruns.findByKey(original.runId, key);
    if (row === undefined) {
      if (IN_PROGRESS.has(source.status))
        throw new ConflictError(
          `run ${source.runId} is still running; cancel it or wait for it to end before re-running it`,
        );
      const { activity } = await inputOf(original);
      const resume = from === 'failed_task' ? await resumeFrom(source, activity.definition.tasks) : undefined;
      ({ row } = await deps.reruns.allocate(original.runId, key, (attempt) => {
        const workflowId = rerunWorkflowId(original.runId, attempt);
        return {
          runId: runIdFor(workflowId),
          workflowId,
          sourceRunId: source.runId,
          fromTaskIndex: resume?.from_index ?? 0,
          resume: resume ?? null,
          bulkRerunId: bulkId,
          priority: priority ?? null,
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
      priority: row.priority,
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
    async rerun(runId: string, from: RerunFrom, header: string | undefined, priority?: number): Promise<RerunOutcome> {
      const key = readKey(header);
      const resolved = await resolve(runId);
      const { row, status } = await rerunUnderKey(resolved, from, key.key, null, priority);
      return { kind: status, answer: toResponse(row, status, key) };
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
    ): Promise<BulkRerunOutcome> {
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
        if (existing !== undefined) return { kind: 'recorded', answer: toBulkRecord(existing) };
      }
      const total = await deps.reruns.countSelection(selectionOf(stored));
      if (request.dry_run) return { kind: 'counted', answer: { dry_run: true, total } };
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
        priority: request.priority ?? null,
      });
      if (created) bulkAccepted?.();
      return { kind: 'recorded', answer: toBulkRecord(row) };
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
      /** The priority the bulk re-run or backfill request named; absent: the default. */
      priority?: number,
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
        return await rerunUnderKey({ original, source: original }, from, key, bulkId, priority);
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
