import {
  concurrencyCoordinatorWorkflowId,
  cronOverlapCoordinatorWorkflowId,
  toScheduledFor,
  type Concurrency,
  type EventEnvelope,
} from '@activity-core/contracts';
import type { RunsRepository } from '@activity-core/db';
import { compileKeyExpression, evaluateKey, type CompiledFilter } from '@activity-core/filters';
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { CONCURRENCY_COORDINATOR_WORKFLOW } from '../names';
import type { LogRunInput } from './run-records';

/** Signal names shared with workflows/concurrency-coordinator.ts (workflow code cannot import this file). */
const SLOT_REQUEST_SIGNAL = 'concurrencySlotRequest';

export interface RequestConcurrencySlotInput {
  /** The run's record: inserted first (idempotently), so it can say `waiting_for_slot`. */
  run: LogRunInput;
  activityName: string;
  concurrency: Concurrency;
  /** The triggering event, for the key expression; absent for cron, backfill and manual runs. */
  event?: EventEnvelope;
}

export interface RequestOverlapSlotInput {
  /** The cron run's record: inserted first (idempotently), so it can say `waiting_for_slot`. */
  run: LogRunInput;
  activityName: string;
  triggerIndex: number;
  overlap: 'skip' | 'buffer_one' | 'buffer_all' | 'cancel_other';
}

export type RequestConcurrencySlotResult =
  { outcome: 'requested'; coordinatorWorkflowId: string; key: string } | { outcome: 'key_error'; message: string };

const compiledKeys = new Map<string, CompiledFilter | string>();

/** A key expression compiled once per worker; a string is why it does not compile. */
function compiledKey(expression: string): CompiledFilter | string {
  let compiled = compiledKeys.get(expression);
  if (compiled === undefined) {
    const result = compileKeyExpression(expression);
    compiled = result.ok ? result.filter : result.error.message;
    if (compiledKeys.size > 1000) compiledKeys.clear();
    compiledKeys.set(expression, compiled);
  }
  return compiled;
}

/**
 * The key of one run: the key expression over the triggering event, or the
 * activity-wide key `''` when the definition has no key or the run has no event.
 */
function concurrencyKeyFor(
  concurrency: Concurrency,
  event: EventEnvelope | undefined,
): { key: string } | { error: string } {
  if (concurrency.key === undefined || event === undefined) return { key: '' };
  const compiled = compiledKey(concurrency.key);
  if (typeof compiled === 'string') return { error: compiled };
  const outcome = evaluateKey(compiled, event);
  return outcome.outcome === 'key' ? { key: outcome.key } : { error: outcome.message };
}

/** The run side and the coordinator's watchdog of concurrency limits (docs/concurrency.md). */
export function createConcurrencyEffects(deps: {
  runs: Pick<RunsRepository, 'insertRun' | 'setRunWaiting' | 'markCancelledByRun'>;
  client: Client;
  /** The byte bound of a concurrency queue (CONCURRENCY_QUEUE_MAX_BYTES); absent: the coordinator's default. */
  concurrencyQueueMaxBytes?: number;
}) {
  const insertRun = async (run: LogRunInput) =>
    await deps.runs.insertRun({
      runId: run.runId,
      workflowId: run.workflowId,
      activityId: run.activityId,
      activityVersion: run.activityVersion,
      triggerType: run.triggerType,
      scheduledFor: run.scheduledFor === undefined ? null : toScheduledFor(run.scheduledFor),
      eventId: run.eventId ?? null,
      windowStart: run.windowStart === undefined ? null : toScheduledFor(run.windowStart),
      windowEnd: run.windowEnd === undefined ? null : toScheduledFor(run.windowEnd),
      ...(run.priority === undefined ? {} : { priority: run.priority }),
      ...(run.fairnessKey === undefined ? {} : { fairnessKey: run.fairnessKey }),
    });
  return {
    /**
     * Evaluates the run's key, records the run as `waiting_for_slot` and asks
     * the key's coordinator for a slot (signal-with-start: the coordinator is
     * started if it is not running). The answer comes back as a signal to the
     * run. Safe to retry: a repeated request changes nothing in the coordinator.
     */
    async requestConcurrencySlot(input: RequestConcurrencySlotInput): Promise<RequestConcurrencySlotResult> {
      const { run } = input;
      await insertRun(run);
      const key = concurrencyKeyFor(input.concurrency, input.event);
      if ('error' in key) return { outcome: 'key_error', message: key.error };
      await deps.runs.setRunWaiting(run.runId, true);
      const coordinatorWorkflowId = concurrencyCoordinatorWorkflowId(run.activityId, key.key);
      const limit = input.concurrency.limit;
      const onLimit = input.concurrency.on_limit;
      await deps.client.workflow.signalWithStart(CONCURRENCY_COORDINATOR_WORKFLOW, {
        workflowId: coordinatorWorkflowId,
        taskQueue: Context.current().info.taskQueue,
        args: [{ activityId: run.activityId, key: key.key, state: { limit, onLimit, holders: [], queue: [] } }],
        signal: SLOT_REQUEST_SIGNAL,
        signalArgs: [
          {
            runWorkflowId: run.workflowId,
            limit,
            onLimit,
            ...(deps.concurrencyQueueMaxBytes === undefined ? {} : { maxQueueBytes: deps.concurrencyQueueMaxBytes }),
          },
        ],
        staticSummary: `${input.activityName} · concurrency ${limit}${key.key === '' ? '' : ` · key ${key.key.slice(0, 100)}`}`,
      });
      return { outcome: 'requested', coordinatorWorkflowId, key: key.key };
    },

    /**
     * A cron run of a trigger with an overlap policy: records the run as
     * `waiting_for_slot` and asks the trigger's overlap coordinator
     * (`overlap-{activity_id}-{trigger_index}`) for its one slot, with
     * signal-with-start. Safe to retry, like requestConcurrencySlot.
     */
    async requestOverlapSlot(input: RequestOverlapSlotInput): Promise<{ coordinatorWorkflowId: string }> {
      const { run } = input;
      await insertRun(run);
      await deps.runs.setRunWaiting(run.runId, true);
      const coordinatorWorkflowId = cronOverlapCoordinatorWorkflowId(run.activityId, input.triggerIndex);
      const request = { runWorkflowId: run.workflowId, limit: 1, onLimit: 'queue', overlap: input.overlap };
      await deps.client.workflow.signalWithStart(CONCURRENCY_COORDINATOR_WORKFLOW, {
        workflowId: coordinatorWorkflowId,
        taskQueue: Context.current().info.taskQueue,
        args: [
          {
            activityId: run.activityId,
            key: `cron:${input.triggerIndex}`,
            state: { limit: 1, onLimit: 'queue', holders: [], queue: [], overlap: input.overlap },
          },
        ],
        signal: SLOT_REQUEST_SIGNAL,
        signalArgs: [request],
        staticSummary: `${input.activityName} · cron trigger ${input.triggerIndex} · overlap ${input.overlap}`,
      });
      return { coordinatorWorkflowId };
    },

    /**
     * Overlap `cancel_other`: records on the running run which newer run
     * replaces it, then asks Temporal to cancel it. A run that closed
     * meanwhile is left as it is (its slot is released or reclaimed anyway).
     */
    async cancelOverlappedRun(input: { workflowId: string; by: string }): Promise<void> {
      await deps.runs.markCancelledByRun(input.workflowId, input.by);
      try {
        await deps.client.workflow.getHandle(input.workflowId).cancel();
      } catch (error) {
        if (!(error instanceof WorkflowNotFoundError)) throw error;
      }
    },

    /** The run holds its slot: `waiting_for_slot` → `running`. */
    async markRunHoldsSlot(input: { runId: string }): Promise<void> {
      await deps.runs.setRunWaiting(input.runId, false);
    },

    /**
     * The watchdog: which of these run workflows are closed (or unknown to
     * Temporal). A run terminated in the Temporal UI never sends its release;
     * the coordinator frees its slot when this names it. A run Temporal
     * cannot be asked about now is reported open and asked again next time.
     */
    async closedWorkflows(input: { workflowIds: string[] }): Promise<string[]> {
      const closed: string[] = [];
      for (const workflowId of input.workflowIds) {
        try {
          const description = await deps.client.workflow.getHandle(workflowId).describe();
          if (description.status.name !== 'RUNNING') closed.push(workflowId);
        } catch (error) {
          if (error instanceof WorkflowNotFoundError) closed.push(workflowId);
        }
      }
      return closed;
    },
  };
}
