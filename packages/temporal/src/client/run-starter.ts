import {
  parseDurationMs,
  parseScheduledFor,
  PRIORITY_DEFAULT,
  PRIORITY_LOWEST,
  type ActivitySnapshot,
  type RunResume,
  type RunTrigger,
} from '@activity-core/contracts';
import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy, type Client } from '@temporalio/client';
import { RUN_ACTIVITY_WORKFLOW } from '../names';
import { runSearchAttributes } from '../search-attributes';
import { runFairness } from './fairness';

export interface StartRunRequest {
  workflowId: string;
  activity: ActivitySnapshot;
  trigger: RunTrigger;
  /** Only for a re-run: the original's run id and this re-run's attempt (search attribute `RerunOf`, summary). */
  rerun?: { of: string; attempt: number };
  /** Only for a re-run from the failed task (see RunActivityInput.resume). */
  resume?: RunResume;
  /** The run's priority (1 highest … 5 lowest) when the caller names one; else see runPriority. */
  priority?: number;
  /** A cron fire time started late by the misfire policy (catch-up, compress): a lower priority, see runPriority. */
  catchUp?: boolean;
}

export interface StartRunOptions {
  /**
   * When the start call gives up. The client retries an unreachable server
   * until this deadline and then fails with DEADLINE_EXCEEDED; the call is
   * cancelled on the wire, so no start lingers in the background to succeed
   * later. Without one, the client keeps retrying for a long time.
   */
  deadline?: Date;
  /**
   * A throttled run (docs/pacing.md): Temporal holds the start until this
   * time (its start delay), while the workflow id is taken at once.
   */
  notBefore?: Date;
}

/** `duplicate` is an expected outcome of a redelivered trigger, never an error. */
export type StartOutcome = 'started' | 'duplicate';

function summaryFor(request: StartRunRequest): string {
  const summary = triggerSummaryFor(request);
  return request.rerun === undefined ? summary : `${summary} · re-run ${request.rerun.attempt} of ${request.rerun.of}`;
}

function triggerSummaryFor(request: StartRunRequest): string {
  const { trigger, activity } = request;
  switch (trigger.type) {
    case 'event':
      return trigger.coalesced?.kind === 'batch'
        ? `${activity.name} · batch of ${trigger.coalesced.count} events (${trigger.coalesced.first_event_id} … ${trigger.coalesced.last_event_id})`
        : `${activity.name} · event ${trigger.event.event_type} (${trigger.event.event_id})`;
    case 'cron':
    case 'backfill':
      return `${activity.name} · ${trigger.type} ${trigger.scheduled_for}`;
    case 'manual':
      return `${activity.name} · manual ${trigger.key}`;
    case 'call':
      return `${activity.name} · called by run ${trigger.parent.run_id} (task ${trigger.parent.task_index})`;
  }
}

/**
 * A run's Temporal priority (1 highest … 5 lowest): the request's when given,
 * else the definition's (default 3), one lower for runs that catch up on the
 * past — re-runs, backfills and cron catch-ups — so they never slow live
 * triggers (docs/pacing.md).
 */
export function runPriority(
  request: Pick<StartRunRequest, 'activity' | 'trigger' | 'rerun' | 'priority' | 'catchUp'>,
): number {
  if (request.priority !== undefined) return request.priority;
  const base = request.activity.definition.priority ?? PRIORITY_DEFAULT;
  const catchingUp = request.rerun !== undefined || request.trigger.type === 'backfill' || request.catchUp === true;
  return catchingUp ? Math.min(PRIORITY_LOWEST, base + 1) : base;
}

/**
 * Starts run workflows with the deterministic id and REJECT_DUPLICATE, the
 * search attributes and a human summary for the Temporal UI.
 */
export function createRunStarter(deps: { client: Client; taskQueue: string }) {
  return {
    async start(request: StartRunRequest, options: StartRunOptions = {}): Promise<StartOutcome> {
      const { trigger, activity } = request;
      const delayMs = options.notBefore === undefined ? 0 : options.notBefore.getTime() - Date.now();
      const priorityKey = runPriority(request);
      // The priority is named when it is not the default, so the summaries of runs at the default read as before.
      const summary = `${summaryFor(request)}${priorityKey === PRIORITY_DEFAULT ? '' : ` · priority ${priorityKey}`}${
        options.notBefore === undefined ? '' : ` · delayed by throttle until ${options.notBefore.toISOString()}`
      }`;
      const start = () =>
        deps.client.workflow.start(RUN_ACTIVITY_WORKFLOW, {
          workflowId: request.workflowId,
          taskQueue: deps.taskQueue,
          args: [{ activity, trigger, ...(request.resume === undefined ? {} : { resume: request.resume }) }],
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
          // The run's wall-clock limit; the run reconciler records the timeout as the run's outcome.
          ...(activity.definition.run_timeout === undefined
            ? {}
            : { workflowExecutionTimeout: parseDurationMs(activity.definition.run_timeout) }),
          typedSearchAttributes: runSearchAttributes({
            activityId: activity.id,
            activityName: activity.name,
            triggerType: trigger.type,
            ...(trigger.type === 'cron' || trigger.type === 'backfill'
              ? { scheduledFor: parseScheduledFor(trigger.scheduled_for) }
              : {}),
            ...(trigger.type === 'event' ? { eventId: trigger.event.event_id } : {}),
            ...(request.rerun === undefined ? {} : { rerunOf: request.rerun.of }),
          }),
          staticSummary: summary,
          // Children (task workflows) and activities inherit it (docs/pacing.md, "Priority" and "Fairness").
          priority: { priorityKey, ...runFairness(activity, trigger) },
          ...(delayMs > 0 ? { startDelay: delayMs } : {}),
          staticDetails: `activity ${activity.id} version ${activity.version}`,
        });
      try {
        await (options.deadline === undefined ? start() : deps.client.withDeadline(options.deadline, start));
        return 'started';
      } catch (error) {
        if (error instanceof WorkflowExecutionAlreadyStartedError) return 'duplicate';
        throw error;
      }
    },
  };
}

export type RunStarter = ReturnType<typeof createRunStarter>;
