import { randomUUID } from 'node:crypto';
import {
  DomainError,
  parseIdempotencyKey,
  parseScheduledFor,
  toScheduledFor,
  InvalidInputError,
  UnavailableError,
  type ActivitySchedules,
  type BackfillRequest,
  type BackfillResponse,
  type FireExplanation,
  type FireRecord,
  type Logger,
  type ReconcileResponse,
  type TriggerNowResponse,
} from '@activity-core/contracts';
import type { DefinitionRow, RunsRepository } from '@activity-core/db';
import type { ScheduleManager } from '@activity-core/schedule-manager';
import { isTemporalUnreachable } from '@activity-core/temporal/client';
import type { Client } from '@temporalio/client';
import type { DefinitionObserver } from './activity-service';
import { keysetPage, type Page } from './pagination';
import type { RerunService } from './rerun-service';

/** How long an API request waits for Temporal before answering 503. */
const TEMPORAL_DEADLINE_MS = 10_000;
/** A backfill starts up to a thousand runs, one after another. */
const BACKFILL_DEADLINE_MS = 120_000;

const UNREACHABLE = 'Temporal is unreachable; retry later (the request is safe to repeat)';

/**
 * Runs `fn` with a deadline on every Temporal call it makes; a Temporal that
 * cannot be reached or does not answer in time is a 503. Its detail says
 * which when it can: a call that ended at the deadline may have outlasted it
 * on a server that answers (the request needed longer: `overDeadline`) or on
 * one that is down (the client retries a refused call until the deadline),
 * so a health check (`overDeadline.temporalAnswers`) decides between the two.
 */
async function withTemporal<T>(options: {
  client: Client;
  deadlineMs: number;
  fn: () => Promise<T>;
  overDeadline?: { detail: string; temporalAnswers: () => Promise<boolean> };
}): Promise<T> {
  const deadline = Date.now() + options.deadlineMs;
  try {
    return await options.client.withDeadline(new Date(deadline), options.fn);
  } catch (error) {
    if (error instanceof DomainError || !isTemporalUnreachable(error)) throw error;
    // A timer may fire a few milliseconds early: "at the deadline" allows for that.
    const atDeadline = Date.now() >= deadline - 100;
    if (atDeadline && options.overDeadline !== undefined && (await options.overDeadline.temporalAnswers()))
      throw new UnavailableError(options.overDeadline.detail);
    throw new UnavailableError(UNREACHABLE);
  }
}

/**
 * `rerun_failed`: each fire time the backfill found already run, whose run
 * failed, is re-run as a re-run of that run (`rerun-{run_id}:{n}`, from the
 * start), unless a re-run of it is under way or succeeded. Each request is its
 * own key, so a repeated backfill re-runs a fire time again only once its last
 * re-run has failed too.
 */
async function rerunFailedFires(
  answer: BackfillResponse,
  runs: RunsRepository,
  reruns: RerunService,
  priority: number | undefined,
): Promise<NonNullable<BackfillResponse['reruns']>> {
  const key = `backfill:${randomUUID()}`;
  const results: NonNullable<BackfillResponse['reruns']> = [];
  for (const fire of answer.fires) {
    if (fire.status !== 'duplicate') continue;
    const original = await runs.getRun(fire.run_id);
    if (original?.status !== 'failed') continue;
    const outcome = await reruns.rerunOriginal(original, 'start', key, null, priority);
    results.push({
      trigger_index: fire.trigger_index,
      scheduled_for: fire.scheduled_for,
      rerun_of: original.runId,
      run_id: outcome.status === 'skipped' ? null : outcome.row.runId,
      workflow_id: outcome.status === 'skipped' ? null : outcome.row.workflowId,
      status: outcome.status,
      detail: outcome.status === 'skipped' ? outcome.detail : null,
    });
  }
  return results;
}

/**
 * Operator actions on cron schedules. Every Temporal call made while serving
 * a request carries a deadline, so an unreachable Temporal makes a request
 * fail in seconds instead of hanging.
 */
export function createScheduleService(deps: {
  manager: ScheduleManager;
  client: Client;
  runs?: RunsRepository;
  reruns?: RerunService;
  /** How long a request other than a backfill waits for Temporal before answering 503. @default 10000 */
  temporalDeadlineMs?: number;
  /** Whether Temporal answers a health check now: tells a slow request from an unreachable server. */
  temporalAnswers?: () => Promise<boolean>;
}) {
  const deadlineMs = deps.temporalDeadlineMs ?? TEMPORAL_DEADLINE_MS;
  const temporal = <T>(fn: () => Promise<T>, limitMs: number, overDeadline: string): Promise<T> =>
    withTemporal({
      client: deps.client,
      deadlineMs: limitMs,
      fn,
      ...(deps.temporalAnswers === undefined
        ? {}
        : { overDeadline: { detail: overDeadline, temporalAnswers: deps.temporalAnswers } }),
    });
  const withDeadline = <T>(fn: () => Promise<T>): Promise<T> =>
    temporal(
      fn,
      deadlineMs,
      `Temporal answers, but did not finish this request within ${deadlineMs / 1000} s; retry later (the request is safe to repeat)`,
    );

  return {
    describe: (activityId: string): Promise<ActivitySchedules> => withDeadline(() => deps.manager.describe(activityId)),
    pause: (activityId: string, note: string | undefined): Promise<ActivitySchedules> =>
      withDeadline(() => deps.manager.pause(activityId, note ?? null)),
    resume: (activityId: string, note: string | undefined) =>
      withDeadline(() => deps.manager.resume(activityId, note ?? null)),
    /** `header` is the raw Idempotency-Key (quoted Structured Field string or bare token). */
    trigger: (activityId: string, header: string | undefined): Promise<TriggerNowResponse> => {
      const key = header === undefined ? undefined : parseIdempotencyKey(header);
      if (key === '')
        throw new InvalidInputError('Idempotency-Key is empty', [
          { path: 'headers.idempotency-key', message: 'must not be empty' },
        ]);
      return withDeadline(() => deps.manager.triggerNow(activityId, key));
    },
    backfill: (activityId: string, request: BackfillRequest): Promise<BackfillResponse> =>
      temporal(
        async () => {
          const answer = await deps.manager.backfill(activityId, request);
          if (request.rerun_failed !== true || deps.runs === undefined || deps.reruns === undefined) return answer;
          return { ...answer, reruns: await rerunFailedFires(answer, deps.runs, deps.reruns, request.priority) };
        },
        BACKFILL_DEADLINE_MS,
        `the backfill did not finish within ${BACKFILL_DEADLINE_MS / 1000} s; the runs it started are kept, ` +
          'and repeating it starts the rest (the times already started answer duplicate)',
      ),
    /**
     * `listing` (default): in-step schedules are read from Temporal's listing, as the workers' sweep does
     * (10,000 in seconds); `describe`: every schedule is described, exact, a few hundred per deadline.
     */
    reconcile: (compare: 'listing' | 'describe' = 'listing'): Promise<ReconcileResponse> =>
      temporal(
        () => deps.manager.reconcile({ compareWith: compare }),
        deadlineMs,
        compare === 'describe'
          ? `the reconcile did not finish within ${deadlineMs / 1000} s: compare=describe describes every schedule, ` +
              'which takes longer than that with many of them (a few hundred on a small, busy server); ' +
              "the default compares with Temporal's schedule listing instead"
          : `the reconcile did not finish within ${deadlineMs / 1000} s: many schedules differ from their ` +
              'definitions and were written one by one; what it wrote is kept, and repeating it (or the next ' +
              "worker's schedule sweep) finishes the rest",
      ),

    async fires(
      activityId: string,
      query: { limit: number; from?: string; to?: string; cursor?: string },
    ): Promise<Page<FireRecord>> {
      return await keysetPage({
        limit: query.limit,
        cursor: query.cursor,
        decode: decodeFireCursor,
        encode: (last: FireRecord) => encodeFireCursor(last.scheduled_for, last.trigger_index),
        fetch: ({ limit, cursor }) =>
          deps.manager.fires(activityId, {
            limit,
            ...(query.from === undefined ? {} : { from: new Date(query.from) }),
            ...(query.to === undefined ? {} : { to: new Date(query.to) }),
            ...(cursor === undefined ? {} : { before: cursor }),
          }),
        toItem: (fire) => fire,
      });
    },

    async explain(activityId: string, scheduledFor: string): Promise<FireExplanation> {
      // Any RFC 3339 instant (the route validated it); sub-seconds are dropped.
      return await deps.manager.explain(activityId, toScheduledFor(scheduledFor));
    },
  };
}

export type ScheduleService = ReturnType<typeof createScheduleService>;

function encodeFireCursor(scheduledFor: string, triggerIndex: number): string {
  return Buffer.from(`${scheduledFor}|${triggerIndex}`).toString('base64url');
}

function decodeFireCursor(cursor: string): { scheduledFor: Date; triggerIndex: number } | undefined {
  try {
    const [at, index] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
    const triggerIndex = Number(index);
    if (!Number.isInteger(triggerIndex) || triggerIndex < 0) return undefined;
    return { scheduledFor: parseScheduledFor(at ?? ''), triggerIndex };
  } catch {
    return undefined;
  }
}

/**
 * Keeps schedules in step with definition writes. A Temporal failure here
 * does not fail the write (the definition is stored and acknowledged): it is
 * logged, and the worker's periodic reconciliation creates or fixes the
 * schedule once Temporal answers.
 */
export function createScheduleObserver(deps: {
  manager: ScheduleManager;
  client: Client;
  logger: () => Logger;
}): DefinitionObserver {
  const withDeadline = <T>(fn: () => Promise<T>): Promise<T> =>
    withTemporal({ client: deps.client, deadlineMs: TEMPORAL_DEADLINE_MS, fn });
  return {
    async onChanged(row: DefinitionRow): Promise<void> {
      try {
        await withDeadline(() => deps.manager.sync(row));
      } catch (error) {
        deps
          .logger()
          .warn(
            { err: error, activityId: row.id },
            'could not update the schedules of this activity now; reconciliation will',
          );
      }
    },
    async onDeleted(row: DefinitionRow): Promise<void> {
      try {
        await withDeadline(() => deps.manager.remove(row));
      } catch (error) {
        deps
          .logger()
          .warn(
            { err: error, activityId: row.id },
            'could not delete the schedules of this activity now; reconciliation will',
          );
      }
    },
  };
}
