import type { RunActivityInput, RunContext, RunContextTask, Task, TaskOutcome } from '@activity-core/contracts';
import { taskInstanceIdFor, taskItemWorkflowId, taskWorkflowId } from '@activity-core/contracts/ids';
import {
  buildTaskGraph,
  decideReadyTasks,
  TASK_GRAPH_LIMITS,
  type TaskSettlement,
  type TaskSkipReason,
} from '@activity-core/contracts/task-graph';
import { condition, proxyLocalActivities, setCurrentDetails } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { LOCAL_BOOKKEEPING_OPTIONS } from './activity-options';
import type { Bookkeeping } from './bookkeeping';

/** A task's `if` and `for_each` are evaluated by the worker, inside the workflow task, and recorded as markers. */
const expressions = proxyLocalActivities<Pick<Activities, 'evaluateTaskExpression'>>(LOCAL_BOOKKEEPING_OPTIONS);

/** Starts one task workflow (or one item of a `for_each` task) and waits for its outcome. */
export type StartTaskWorkflow = (args: {
  index: number;
  workflowId: string;
  context: RunContext;
  itemIndex?: number;
  taskKey?: string;
  /** Graph runs' task workflows carry the run's ActivityId search attribute. */
  graph?: true;
}) => Promise<TaskOutcome>;

export interface TaskGraphRunArgs {
  input: RunActivityInput;
  runId: string;
  context: RunContext;
  books: Bookkeeping;
  /** Runs a bookkeeping write the way this run records (not cancellable on local bookkeeping). */
  record: <T>(write: () => Promise<T>) => Promise<T>;
  startTask: StartTaskWorkflow;
}

/**
 * A run of a definition that uses the graph model (see task-graph.ts in
 * contracts): every task whose needs have settled is decided at once — run,
 * or skipped with its reason recorded — and up to `max_parallel` task
 * workflows (branches and `for_each` items together) run at a time. Returns
 * every task's outcome in index order once every task has settled.
 */
export async function runTaskGraph(args: TaskGraphRunArgs): Promise<TaskOutcome[]> {
  const { input, runId, books, record } = args;
  const tasks = input.activity.definition.tasks;
  const graph = buildTaskGraph(tasks);
  const capacity = input.activity.definition.max_parallel ?? TASK_GRAPH_LIMITS.defaultMaxParallel;
  const settled = new Map<number, TaskSettlement>();
  const started = new Set<number>();
  const outcomes = new Map<number, TaskOutcome>();
  const view: Record<string, RunContextTask> = {};
  const context: RunContext = { ...args.context, tasks: view };
  let running = 0;
  let changes = 0;
  let fatal: { error: unknown } | undefined;

  /** The graph's progress as the run workflow's current details in the Temporal UI (a query, not history). */
  const showProgress = (): void => {
    const name = (index: number): string => tasks[index]!.key ?? `#${index}`;
    const by = (status: string): string[] =>
      [...outcomes.values()].filter((outcome) => outcome.status === status).map((outcome) => name(outcome.index));
    const runningNow = [...started].filter((index) => !settled.has(index)).map(name);
    const parts = [
      `**${settled.size} of ${tasks.length} tasks settled**`,
      runningNow.length > 0 ? `running: ${runningNow.join(', ')}` : undefined,
      by('succeeded').length > 0 ? `succeeded: ${by('succeeded').join(', ')}` : undefined,
      by('failed').length > 0 ? `failed: ${by('failed').join(', ')}` : undefined,
      by('skipped').length > 0 ? `skipped: ${by('skipped').join(', ')}` : undefined,
    ];
    setCurrentDetails(parts.filter((part) => part !== undefined).join('\n\n'));
  };

  const slot = async <T>(work: () => Promise<T>): Promise<T> => {
    // Re-checked after every wake-up: conditions that turn true together all wake in one activation.
    while (running >= capacity) await condition(() => running < capacity);
    running += 1;
    try {
      return await work();
    } finally {
      running -= 1;
      changes += 1;
    }
  };

  const settle = (index: number, outcome: TaskOutcome): void => {
    const task = tasks[index]!;
    outcomes.set(index, outcome);
    settled.set(
      index,
      outcome.status === 'succeeded'
        ? { status: 'succeeded' }
        : outcome.status === 'failed'
          ? { status: 'failed', continueOnFailure: task.continue_on_failure }
          : { status: 'skipped', why: skipReasons.get(index)! },
    );
    const entry: RunContextTask = {
      index,
      type: task.type,
      status: outcome.status,
      ...(outcome.result === undefined ? {} : { result: outcome.result }),
    };
    view[String(index)] = entry;
    if (task.key !== undefined) view[task.key] = entry;
    changes += 1;
    showProgress();
  };

  const skipReasons = new Map<number, TaskSkipReason>();
  const skip = async (index: number, why: TaskSkipReason): Promise<void> => {
    const task = tasks[index]!;
    const workflowId = taskWorkflowId(runId, task.type, index);
    skipReasons.set(index, why);
    await record(() =>
      books.recordTask({
        id: taskInstanceIdFor(workflowId),
        runId,
        taskType: task.type,
        taskIndex: index,
        workflowId,
        status: 'skipped',
        detail: why,
        ...(task.key === undefined ? {} : { taskKey: task.key }),
      }),
    );
    settle(index, { index, type: task.type, workflowId, status: 'skipped' });
  };

  /** A task that failed before any workflow of its own ran (its expression failed): recorded like a task failure. */
  const failBeforeStart = async (index: number, message: string): Promise<void> => {
    const task = tasks[index]!;
    const workflowId = taskWorkflowId(runId, task.type, index);
    const error = { message, type: 'task_expression_failed' };
    await record(() =>
      books.recordTask({
        id: taskInstanceIdFor(workflowId),
        runId,
        taskType: task.type,
        taskIndex: index,
        workflowId,
        status: 'failed',
        error,
        ...(task.key === undefined ? {} : { taskKey: task.key }),
      }),
    );
    settle(index, { index, type: task.type, workflowId, status: 'failed', error });
  };

  const bindings = () => ({
    event: (context.event ?? {}) as Record<string, unknown>,
    run: context.run as unknown as Record<string, unknown>,
    tasks: view as unknown as Record<string, unknown>,
    input: context.input ?? {},
  });

  const runNode = async (index: number): Promise<void> => {
    const task = tasks[index]!;
    const prior = reusable(input, index, task);
    if (prior !== undefined) return settle(index, prior);
    if (task.if !== undefined) {
      const answer = await expressions.evaluateTaskExpression({
        kind: 'condition',
        expression: task.if,
        bindings: bindings(),
      });
      if (answer.outcome === 'error') return await failBeforeStart(index, `if: ${answer.message}`);
      if (answer.value !== true)
        return await skip(index, { reason: 'condition_false', expression: task.if, value: answer.value });
    }
    if (task.for_each !== undefined) return await runForEach(index, task, task.for_each);
    const snapshot = snapshotOf(context);
    const workflowId = taskWorkflowId(runId, task.type, index);
    const outcome = await slot(() =>
      args.startTask({
        index,
        workflowId,
        context: snapshot,
        graph: true,
        ...(task.key === undefined ? {} : { taskKey: task.key }),
      }),
    );
    settle(index, outcome);
  };

  const runForEach = async (index: number, task: Task, expression: string): Promise<void> => {
    const answer = await expressions.evaluateTaskExpression({ kind: 'list', expression, bindings: bindings() });
    if (answer.outcome === 'error') return await failBeforeStart(index, `for_each: ${answer.message}`);
    const items = answer.value as unknown[];
    if (items.length > TASK_GRAPH_LIMITS.maxForEachItems)
      return await failBeforeStart(
        index,
        `for_each: the expression gave ${items.length} items; the limit is ${TASK_GRAPH_LIMITS.maxForEachItems}`,
      );
    const limit = Math.min(task.max_parallel ?? capacity, capacity);
    let inFlight = 0;
    const results: unknown[] = new Array<unknown>(items.length).fill(null);
    let firstFailure: { item: number; outcome: TaskOutcome } | undefined;
    const base = snapshotOf(context);
    const runItem = async (item: number): Promise<void> => {
      while (inFlight >= limit) await condition(() => inFlight < limit);
      inFlight += 1;
      try {
        const outcome = await slot(() =>
          args.startTask({
            index,
            itemIndex: item,
            workflowId: taskItemWorkflowId(runId, task.type, index, item),
            context: { ...base, item: items[item], item_index: item },
            graph: true,
            ...(task.key === undefined ? {} : { taskKey: task.key }),
          }),
        );
        results[item] = outcome.result ?? null;
        if (outcome.status === 'failed' && (firstFailure === undefined || item < firstFailure.item))
          firstFailure = { item, outcome };
      } finally {
        inFlight -= 1;
      }
    };
    // Started in item order; each waits for its turn, so at most `limit` run at once.
    await Promise.all(items.map((_, item) => runItem(item)));
    const workflowId = taskWorkflowId(runId, task.type, index);
    if (firstFailure !== undefined) {
      const error = {
        message: `item ${firstFailure.item} failed: ${firstFailure.outcome.error?.message ?? 'unknown error'}`,
        type: firstFailure.outcome.error?.type ?? 'task_failed',
      };
      return settle(index, { index, type: task.type, workflowId, status: 'failed', result: results, error });
    }
    const bytes = JSON.stringify(results).length;
    if (bytes > TASK_GRAPH_LIMITS.maxForEachResultBytes)
      return await failBeforeStart(
        index,
        `for_each: the items' results are ${bytes} bytes of JSON together; the limit is ${TASK_GRAPH_LIMITS.maxForEachResultBytes}`,
      );
    if (items.length === 0)
      await record(() =>
        books.recordTask({
          id: taskInstanceIdFor(workflowId),
          runId,
          taskType: task.type,
          taskIndex: index,
          workflowId,
          status: 'succeeded',
          result: [],
          ...(task.key === undefined ? {} : { taskKey: task.key }),
        }),
      );
    settle(index, { index, type: task.type, workflowId, status: 'succeeded', result: results });
  };

  while (settled.size < tasks.length) {
    if (fatal !== undefined) throw fatal.error;
    const decisions = decideReadyTasks(graph, settled, started);
    for (const decision of decisions) {
      started.add(decision.index);
      if (decision.decision === 'skip') await skip(decision.index, decision.why);
      else
        runNode(decision.index).catch((error: unknown) => {
          // Cancellation of the run, or a bug: the loop below rethrows it in the run's own flow.
          fatal ??= { error };
          changes += 1;
        });
    }
    if (decisions.length > 0) showProgress();
    if (decisions.some((decision) => decision.decision === 'skip')) continue;
    if (settled.size === tasks.length) break;
    const seen = changes;
    await condition(() => changes !== seen);
  }
  if (fatal !== undefined) throw fatal.error;
  return tasks.map((_, index) => outcomes.get(index)!);
}

/**
 * A re-run from the failed task of a graph run reuses the tasks its plan lists
 * (those that succeeded with every ancestor succeeded; see graphResumePlan in
 * the API), whatever their index; a `for_each` task runs again.
 */
function reusable(input: RunActivityInput, index: number, task: Task): TaskOutcome | undefined {
  if (input.resume === undefined || task.for_each !== undefined) return undefined;
  const prior = input.resume.prior.find((entry) => entry.index === index);
  if (prior?.status !== 'succeeded') return undefined;
  return { index, type: task.type, workflowId: prior.workflow_id, status: 'succeeded', result: prior.result };
}

/** What a task workflow is given: a copy, so later settlements do not change what it was started with. */
function snapshotOf(context: RunContext): RunContext {
  const tasks = Array.isArray(context.tasks)
    ? context.tasks.map((entry) => ({ ...entry }))
    : Object.fromEntries(Object.entries(context.tasks).map(([name, entry]) => [name, { ...entry }]));
  return { ...context, tasks };
}
