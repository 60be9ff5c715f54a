/**
 * Rebuilding a run's input for its re-run: the definition version and
 * trigger the original ran with, and (from the failed task) where the re-run
 * begins with the recorded outcomes of the tasks before it. Reads only; an
 * input that cannot be rebuilt is a ConflictError naming what is missing.
 */
import { ancestorsOf, buildTaskGraph, usesTaskGraph, type GraphTaskSpec } from '@activity-core/contracts';
import {
  ConflictError,
  formatScheduledFor,
  parseManualRunWorkflowId,
  type ActivityDefinition,
  type EventEnvelope,
  type RunResume,
  type RunTrigger,
} from '@activity-core/contracts';
import type { DefinitionsRepository, RerunsRepository, RunRow, RunsRepository } from '@activity-core/db';

/** What a re-run starts with: the original's definition version and trigger. */
export interface RerunInput {
  activity: { id: string; name: string; version: number; definition: ActivityDefinition };
  trigger: RunTrigger;
}

function taskIndexOf(error: unknown): number | undefined {
  const index = (error as { task_index?: unknown } | null)?.task_index;
  return typeof index === 'number' && Number.isInteger(index) && index >= 0 ? index : undefined;
}

/**
 * Where a re-run from the failed task begins, and the outcomes of the tasks
 * before it, from the source run's recorded task outcomes: the task its error
 * names, else the first task that did not succeed. A ConflictError when no
 * task failed, or one before it has no recorded outcome.
 */
export function resumePlan(
  sourceRunId: string,
  sourceError: unknown,
  taskCount: number,
  outcomes: ReadonlyMap<number, RunResume['prior'][number]>,
): RunResume {
  let fromIndex = taskIndexOf(sourceError);
  if (fromIndex === undefined) {
    fromIndex = 0;
    while (fromIndex < taskCount && outcomes.get(fromIndex)?.status === 'succeeded') fromIndex++;
  }
  if (fromIndex >= taskCount)
    throw new ConflictError(`run ${sourceRunId} has no failed task to re-run from; re-run it from the start`);
  const prior: RunResume['prior'] = [];
  for (let index = 0; index < fromIndex; index++) {
    const outcome = outcomes.get(index);
    if (outcome === undefined)
      throw new ConflictError(
        `run ${sourceRunId} cannot be re-run from task ${fromIndex}: task ${index} has no recorded outcome`,
      );
    prior.push(outcome);
  }
  return { from_index: fromIndex, prior };
}

/**
 * A re-run from the failed task of a graph run: every task that succeeded and
 * whose ancestors all succeeded is reused with its recorded result (its inputs
 * are the same); failed and skipped tasks and everything downstream of them
 * run again, and so does a `for_each` task (its outcome is its items).
 * `from_index` is the first task that runs again.
 */
export function graphResumePlan(
  sourceRunId: string,
  tasks: readonly GraphTaskSpec[],
  outcomes: ReadonlyMap<number, RunResume['prior'][number]>,
): RunResume {
  const graph = buildTaskGraph(tasks);
  const reusable = (index: number): boolean =>
    outcomes.get(index)?.status === 'succeeded' &&
    tasks[index]!.for_each === undefined &&
    [...ancestorsOf(graph, index)].every((ancestor) => outcomes.get(ancestor)?.status === 'succeeded');
  const prior = tasks.flatMap((_, index) => (reusable(index) ? [outcomes.get(index)!] : []));
  const fromIndex = tasks.findIndex((_, index) => !reusable(index));
  if (fromIndex === -1)
    throw new ConflictError(`run ${sourceRunId} has no failed task to re-run from; re-run it from the start`);
  return { from_index: fromIndex, prior };
}

export function createRerunInput(deps: {
  runs: Pick<RunsRepository, 'listTasks'>;
  reruns: Pick<RerunsRepository, 'getRerun' | 'storedEvent'>;
  definitions: Pick<DefinitionsRepository, 'getVersion'>;
}) {
  return {
    /** The definition version and trigger the original ran with: a re-run repeats them exactly. */
    async inputOf(original: RunRow): Promise<RerunInput> {
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
          const key = parseManualRunWorkflowId(original.workflowId, original.activityId) ?? original.workflowId;
          return { activity, trigger: { type: 'manual', key, requested_at: original.startedAt.toISOString() } };
        }
      }
    },

    /** Where a re-run from the failed task begins, and the recorded outcomes of the tasks before it. */
    async resumeFrom(source: RunRow, tasks: readonly GraphTaskSpec[]): Promise<RunResume> {
      const link = await deps.reruns.getRerun(source.runId);
      const outcomes = new Map<number, RunResume['prior'][number]>();
      // A source that was itself resumed did not execute its earliest tasks: their outcomes are in its input.
      for (const entry of ((link?.resume as RunResume | null) ?? { prior: [] }).prior) outcomes.set(entry.index, entry);
      for (const task of await deps.runs.listTasks(source.runId)) {
        // The items of a for_each task are its parts, not its outcome: such a task runs again whole.
        if (task.itemIndex !== null) continue;
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
      if (usesTaskGraph(tasks)) return graphResumePlan(source.runId, tasks, outcomes);
      return resumePlan(source.runId, source.error, tasks.length, outcomes);
    },
  };
}

export type RerunInputs = ReturnType<typeof createRerunInput>;
