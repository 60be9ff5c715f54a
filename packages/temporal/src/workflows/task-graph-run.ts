import type { RunActivityInput, RunContext, RunContextTask, Task, TaskOutcome } from '@activity-core/contracts';
import { taskInstanceIdFor, taskItemWorkflowId, taskWorkflowId } from '@activity-core/contracts/ids';
import {
  ancestorsOf,
  buildTaskGraph,
  decideReadyTasks,
  TASK_GRAPH_LIMITS,
  type TaskSettlement,
  type TaskSkipReason,
} from '@activity-core/contracts/task-graph';
import {
  CancellationScope,
  condition,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
} from '@temporalio/workflow';
import type { Effects, EvaluateTaskExpressionInput } from '../effects';
import { BOOKKEEPING_OPTIONS, LOCAL_BOOKKEEPING_OPTIONS } from './effect-options';
import type { Bookkeeping } from './bookkeeping';

type Expressions = Pick<Effects, 'evaluateTaskExpression'>;
/** A task's `if` and `for_each` are evaluated by the worker, inside the workflow task, and recorded as markers. */
const localExpressions = proxyLocalActivities<Expressions>(LOCAL_BOOKKEEPING_OPTIONS);
const durableExpressions = proxyActivities<Expressions>(BOOKKEEPING_OPTIONS);

/**
 * An evaluation as a local activity, handed to an ordinary one when the local
 * attempt did not answer: it timed out on a loaded worker, or the worker
 * cancelled it (evicting the workflow). Only a cancellation of the run itself
 * is the run's. The decision follows the recorded marker, so replay takes it alike.
 */
async function evaluate(input: EvaluateTaskExpressionInput) {
  try {
    return await localExpressions.evaluateTaskExpression(input);
  } catch (error) {
    if (isCancellation(error) && CancellationScope.current().consideredCancelled) throw error;
    return await durableExpressions.evaluateTaskExpression(input);
  }
}

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
      // A skipped task's result reads as null, so a task after it can test it rather than fail on it.
      ...(outcome.result === undefined
        ? outcome.status === 'skipped'
          ? { result: null }
          : {}
        : { result: outcome.result }),
    };
    view[String(index)] = entry;
    if (task.key !== undefined) view[task.key] = entry;
    changes += 1;
    showProgress();
  };

  /**
   * The task instance of a task this run settles without a workflow of its own
   * (skipped, failed before it started, or a `for_each` of no items), under
   * the id its workflow would have had. Returns that id.
   */
  const recordWithoutWorkflow = async (
    index: number,
    fields: {
      status: 'skipped' | 'failed' | 'succeeded';
      detail?: unknown;
      error?: { message: string; type: string };
      result?: unknown;
    },
  ): Promise<string> => {
    const task = tasks[index]!;
    const workflowId = taskWorkflowId(runId, task.type, index);
    await record(() =>
      books.recordTask({
        id: taskInstanceIdFor(workflowId),
        runId,
        taskType: task.type,
        taskIndex: index,
        workflowId,
        ...fields,
        ...(task.key === undefined ? {} : { taskKey: task.key }),
      }),
    );
    return workflowId;
  };

  const skipReasons = new Map<number, TaskSkipReason>();
  const skip = async (index: number, why: TaskSkipReason): Promise<void> => {
    skipReasons.set(index, why);
    const workflowId = await recordWithoutWorkflow(index, { status: 'skipped', detail: why });
    settle(index, { index, type: tasks[index]!.type, workflowId, status: 'skipped' });
  };

  /** A task that failed before any workflow of its own ran (its expression failed): recorded like a task failure. */
  const failBeforeStart = async (index: number, message: string): Promise<void> => {
    const error = { message, type: 'task_expression_failed' };
    const workflowId = await recordWithoutWorkflow(index, { status: 'failed', error });
    settle(index, { index, type: tasks[index]!.type, workflowId, status: 'failed', error });
  };

  /**
   * What task `index` reads: the entries of its ancestors only (by index, and
   * by key), whatever else has settled by then — so what it sees never depends
   * on which branch finished first, and no task carries results it cannot use.
   */
  const visibleTo = (index: number): Record<string, RunContextTask> => {
    const visible: Record<string, RunContextTask> = {};
    for (const ancestor of [...ancestorsOf(graph, index)].sort((a, b) => a - b)) {
      const entry = view[String(ancestor)];
      if (entry === undefined) continue;
      visible[String(ancestor)] = { ...entry };
      const key = tasks[ancestor]!.key;
      if (key !== undefined) visible[key] = visible[String(ancestor)]!;
    }
    return visible;
  };
  const bindings = (index: number) => ({
    event: (context.event ?? {}) as Record<string, unknown>,
    run: context.run as unknown as Record<string, unknown>,
    tasks: visibleTo(index) as unknown as Record<string, unknown>,
    input: context.input ?? {},
    // The run of a batch: its events (docs/coalescing.md); absent otherwise, so other runs' effect inputs are unchanged.
    ...(context.events === undefined ? {} : { events: context.events as unknown as Array<Record<string, unknown>> }),
  });

  /**
   * Every task workflow's input is recorded in this run's history: their
   * bytes together are bounded (TASK_GRAPH_LIMITS.maxChildInputBytes), and so
   * is the number of task workflows, so a fan-out cannot push the history past
   * Temporal's limits. A start past either fails its task, saying which.
   */
  let childInputBytes = 0;
  let childWorkflows = 0;
  const admit = (childContext: RunContext): string | undefined => {
    const bytes = JSON.stringify(childContext).length;
    if (childWorkflows + 1 > TASK_GRAPH_LIMITS.maxTaskWorkflowsPerRun)
      return `the run would start more than ${TASK_GRAPH_LIMITS.maxTaskWorkflowsPerRun} task workflows; that is the limit`;
    if (childInputBytes + bytes > TASK_GRAPH_LIMITS.maxChildInputBytes)
      return `the inputs of this run's task workflows would exceed ${TASK_GRAPH_LIMITS.maxChildInputBytes} characters of JSON together (this one is ${bytes}); that is the limit`;
    childWorkflows += 1;
    childInputBytes += bytes;
    return undefined;
  };

  const runNode = async (index: number): Promise<void> => {
    const task = tasks[index]!;
    const prior = reusable(input, index, task);
    if (prior !== undefined) return settle(index, prior);
    if (task.if !== undefined) {
      const answer = await evaluate({ kind: 'condition', expression: task.if, bindings: bindings(index) });
      if (answer.outcome === 'error') return await failBeforeStart(index, `if: ${answer.message}`);
      if (answer.value !== true)
        return await skip(index, { reason: 'condition_false', expression: task.if, value: answer.value });
    }
    if (task.for_each !== undefined) return await runForEach(index, task, task.for_each);
    const snapshot: RunContext = { ...context, tasks: visibleTo(index) };
    const refused = admit(snapshot);
    if (refused !== undefined) return await failBeforeStart(index, refused);
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
    const answer = await evaluate({ kind: 'list', expression, bindings: bindings(index) });
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
    const base: RunContext = { ...context, tasks: visibleTo(index) };
    // Admitted together before any item starts: a fan-out runs whole or not at all.
    const itemContexts = items.map((value, item): RunContext => ({ ...base, item: value, item_index: item }));
    let refused: string | undefined;
    for (const itemContext of itemContexts) refused ??= admit(itemContext);
    if (refused !== undefined) return await failBeforeStart(index, `for_each: ${refused}`);
    const runItem = async (item: number): Promise<void> => {
      while (inFlight >= limit) await condition(() => inFlight < limit);
      inFlight += 1;
      try {
        const outcome = await slot(() =>
          args.startTask({
            index,
            itemIndex: item,
            workflowId: taskItemWorkflowId(runId, task.type, index, item),
            context: itemContexts[item]!,
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
    if (items.length === 0) await recordWithoutWorkflow(index, { status: 'succeeded', result: [] });
    settle(index, { index, type: task.type, workflowId, status: 'succeeded', result: results });
  };

  const inFlight: Array<Promise<void>> = [];
  try {
    while (settled.size < tasks.length) {
      if (fatal !== undefined) throw fatal.error;
      // Read before anything is launched: a task settled during the launch (a reused one) is a change.
      const seen = changes;
      const decisions = decideReadyTasks(graph, settled, started);
      for (const decision of decisions) {
        started.add(decision.index);
        if (decision.decision === 'skip') await skip(decision.index, decision.why);
        else
          inFlight.push(
            runNode(decision.index).catch((error: unknown) => {
              // Cancellation of the run, or a bug: the loop rethrows it in the run's own flow.
              fatal ??= { error };
              changes += 1;
            }),
          );
      }
      if (decisions.length > 0) showProgress();
      if (settled.size === tasks.length) break;
      await condition(() => changes !== seen);
    }
  } catch (error) {
    // A cancelled run ends once its task workflows have: each is cancelled with it and waited for,
    // so no task of this run is still at work when the run records `cancelled` and frees its slots.
    if (isCancellation(error)) await Promise.allSettled(inFlight);
    throw error;
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
