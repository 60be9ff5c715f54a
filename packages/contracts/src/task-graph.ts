/**
 * Task graphs: which task of a run may start when, decided by pure functions
 * the run workflow calls (no I/O, no clock), so the decisions replay.
 *
 * The model, in one place:
 * - A task needs the tasks its `depends_on` names (by their `key`). A task
 *   without `depends_on` needs the task before it (none for the first task),
 *   so a definition that names no dependency is the straight line it always
 *   was; `depends_on: []` makes a task a root that starts with the run.
 * - A task is decided once every task it needs has settled (succeeded, failed
 *   or skipped). Its `trigger_rule` then says whether it runs:
 *   `all_succeeded` (the default): every need succeeded, was skipped by its
 *   own condition or rule, or failed with `continue_on_failure`;
 *   `all_done`: always (cleanup, "finally"); `any_failed`: at least one need
 *   failed (a failure branch). A need that was skipped because a failure
 *   upstream stopped it counts as failed for this purpose, so a failure
 *   reaches every task downstream of it.
 * - A task the rule lets run and whose `if` is false is skipped, with the
 *   expression and its value recorded.
 * - Independent branches go on when one fails; the run fails when any task
 *   failed without `continue_on_failure`, once every task has settled.
 */
import { DEFINITION_JSON_MAX_DEPTH } from './json-depth';

/** What one definition's graph may ask for; each refusal is a 400 naming the field. */
export const TASK_GRAPH_LIMITS = {
  /** Entries in one task's `depends_on`. */
  maxDependencies: 20,
  /** Task workflows of one run running at once when the definition does not say (`max_parallel`). */
  defaultMaxParallel: 10,
  /** The highest `max_parallel` a definition or a `for_each` task may ask for. */
  maxParallel: 50,
  /** Items one `for_each` may produce at run time; more fails the task with a message naming the limit. */
  maxForEachItems: 1000,
  /** Characters of the JSON list of item results a `for_each` task passes on as its result (and of its list of items). */
  maxForEachResultBytes: 1024 * 1024,
  /** Task workflows one run may start (tasks and `for_each` items together): each adds events to the run's history. */
  maxTaskWorkflowsPerRun: 2000,
  /** Characters of JSON the inputs of one run's task workflows may add up to: each input is in the run's history. */
  maxChildInputBytes: 16 * 1024 * 1024,
} as const;

/** The pattern of a task `key`: how `depends_on`, templates and conditions name a task. */
export const TASK_KEY_PATTERN = /^[a-z][a-z0-9_]{0,62}$/;

export type TriggerRule = 'all_succeeded' | 'all_done' | 'any_failed';
export const TRIGGER_RULES = ['all_succeeded', 'all_done', 'any_failed'] as const satisfies readonly TriggerRule[];

/** The fields of a task that shape the graph (a structural subset of the definition's Task). */
export interface GraphTaskSpec {
  readonly type: string;
  readonly key?: string | undefined;
  readonly depends_on?: readonly string[] | undefined;
  readonly if?: string | undefined;
  readonly trigger_rule?: TriggerRule | undefined;
  readonly for_each?: string | undefined;
  readonly max_parallel?: number | undefined;
  readonly continue_on_failure?: boolean | undefined;
  readonly config?: unknown;
}

/**
 * True when a definition uses anything of the graph model. Runs of other
 * definitions take the straight-line path the run workflow has always had,
 * command for command, so a linear activity pays nothing for graphs.
 */
export function usesTaskGraph(tasks: readonly GraphTaskSpec[]): boolean {
  return tasks.some(
    (task) =>
      task.key !== undefined ||
      task.depends_on !== undefined ||
      task.if !== undefined ||
      task.for_each !== undefined ||
      task.trigger_rule !== undefined,
  );
}

export interface TaskGraphNode {
  readonly index: number;
  readonly key: string | undefined;
  /** Indices of the tasks this one needs. */
  readonly needs: readonly number[];
  readonly rule: TriggerRule;
}

export interface TaskGraph {
  readonly nodes: readonly TaskGraphNode[];
}

/** The graph of a definition that passed {@link taskGraphIssues}: needs resolved to indices. */
export function buildTaskGraph(tasks: readonly GraphTaskSpec[]): TaskGraph {
  const byKey = new Map<string, number>();
  tasks.forEach((task, index) => {
    if (task.key !== undefined) byKey.set(task.key, index);
  });
  return {
    nodes: tasks.map((task, index) => ({
      index,
      key: task.key,
      needs:
        task.depends_on === undefined
          ? index === 0
            ? []
            : [index - 1]
          : task.depends_on.map((key) => {
              const need = byKey.get(key);
              if (need === undefined) throw new Error(`task ${index} depends on unknown task key "${key}"`);
              return need;
            }),
      rule: task.trigger_rule ?? 'all_succeeded',
    })),
  };
}

/** Why a task did not run; recorded on its task instance and shown by the API and the CLI. */
export type TaskSkipReason =
  | { readonly reason: 'condition_false'; readonly expression: string; readonly value: unknown }
  | { readonly reason: 'need_failed'; readonly rule: TriggerRule; readonly needs: readonly number[] }
  | { readonly reason: 'no_need_failed'; readonly rule: TriggerRule };

/** How a task of a graph run ended. */
export type TaskSettlement =
  | { readonly status: 'succeeded' }
  | { readonly status: 'failed'; readonly continueOnFailure: boolean }
  | { readonly status: 'skipped'; readonly why: TaskSkipReason };

/** True when a settled need counts as a failure for the tasks that need it. */
export function failedForDependents(settlement: TaskSettlement): boolean {
  if (settlement.status === 'failed') return true;
  return settlement.status === 'skipped' && settlement.why.reason === 'need_failed';
}

/** What to do with one task whose needs have all settled. */
export type GraphDecision =
  | { readonly index: number; readonly decision: 'run' }
  | { readonly index: number; readonly decision: 'skip'; readonly why: TaskSkipReason };

/**
 * The tasks that can be decided now: not yet started or settled, every need
 * settled. In index order, so two replays of one history decide alike.
 */
export function decideReadyTasks(
  graph: TaskGraph,
  settled: ReadonlyMap<number, TaskSettlement>,
  started: ReadonlySet<number>,
): GraphDecision[] {
  const decisions: GraphDecision[] = [];
  for (const node of graph.nodes) {
    if (started.has(node.index) || settled.has(node.index)) continue;
    const needs = node.needs.map((need) => settled.get(need));
    if (needs.some((need) => need === undefined)) continue;
    const failed = node.needs.filter((need) => failedForDependents(settled.get(need)!));
    if (node.rule === 'all_done') decisions.push({ index: node.index, decision: 'run' });
    else if (node.rule === 'any_failed')
      decisions.push(
        failed.length > 0
          ? { index: node.index, decision: 'run' }
          : { index: node.index, decision: 'skip', why: { reason: 'no_need_failed', rule: node.rule } },
      );
    else {
      const blocking = node.needs.filter((need) => {
        const settlement = settled.get(need)!;
        return settlement.status === 'failed' ? !settlement.continueOnFailure : failedForDependents(settlement);
      });
      decisions.push(
        blocking.length === 0
          ? { index: node.index, decision: 'run' }
          : { index: node.index, decision: 'skip', why: { reason: 'need_failed', rule: node.rule, needs: blocking } },
      );
    }
  }
  return decisions;
}

/** Indices of every task `index` needs, directly or through others. */
export function ancestorsOf(graph: TaskGraph, index: number): Set<number> {
  const seen = new Set<number>();
  const stack = [...graph.nodes[index]!.needs];
  while (stack.length > 0) {
    const next = stack.pop()!;
    if (seen.has(next)) continue;
    seen.add(next);
    stack.push(...graph.nodes[next]!.needs);
  }
  return seen;
}

/** `{{ tasks.<key or index>… }}` in a template string. */
const TEMPLATE_TASK_REFERENCE = /\{\{\s*tasks\.([A-Za-z0-9_-]+)/g;
/** `tasks.<key or index>` or `tasks["key"]` in a CEL expression. */
const EXPRESSION_TASK_REFERENCE =
  /(?<![A-Za-z0-9_.])tasks\s*(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*(?:"([^"]*)"|'([^']*)'|(\d+))\s*\])/g;

/**
 * Every string inside a task's config with its path. Iterative and no deeper
 * than JSON a definition may hold (deeper is refused by the depth check), so
 * no nesting can exhaust the stack or the time of a request.
 */
function templateStrings(config: unknown, root: Array<string | number>): Array<[string, Array<string | number>]> {
  const out: Array<[string, Array<string | number>]> = [];
  const stack: Array<[unknown, Array<string | number>]> = [[config, root]];
  const maxPath = root.length + DEFINITION_JSON_MAX_DEPTH + 2;
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    if (path.length > maxPath) continue;
    if (typeof value === 'string') out.push([value, path]);
    else if (Array.isArray(value)) value.forEach((item, index) => stack.push([item, [...path, index]]));
    else if (value !== null && typeof value === 'object')
      for (const [key, item] of Object.entries(value)) stack.push([item, [...path, key]]);
  }
  return out.reverse();
}

/** One thing a definition's graph breaks: the field, a sentence, and a stable code. */
export interface TaskGraphIssue {
  readonly path: Array<string | number>;
  readonly message: string;
  readonly code: string;
}

/**
 * What the definition's graph breaks, each naming the field: duplicate or
 * unknown keys, a task depending on itself, cycles, `max_parallel` on a task
 * without `for_each` or above the definition's, and a template or expression
 * that reads the result of a task that is not an ancestor of the task reading
 * it (it could not have run yet). Expressions are compiled elsewhere (the
 * CEL check); this is structure only.
 */
export function taskGraphIssues(definition: {
  readonly tasks: readonly GraphTaskSpec[];
  readonly max_parallel?: number | undefined;
}): TaskGraphIssue[] {
  const issues: TaskGraphIssue[] = [];
  const issue = (path: Array<string | number>, message: string, code: string): void => {
    issues.push({ path, message, code });
  };
  const { tasks } = definition;
  const byKey = new Map<string, number>();
  tasks.forEach((task, index) => {
    if (task.key === undefined) return;
    const first = byKey.get(task.key);
    if (first !== undefined)
      issue(['tasks', index, 'key'], `key "${task.key}" is already the key of tasks[${first}]`, 'duplicate_task_key');
    else byKey.set(task.key, index);
  });
  let structural = issues.length === 0;
  tasks.forEach((task, index) => {
    const seen = new Set<string>();
    task.depends_on?.forEach((key, position) => {
      const at = ['tasks', index, 'depends_on', position];
      if (seen.has(key)) issue(at, `"${key}" is named twice`, 'duplicate_dependency');
      seen.add(key);
      if (key === task.key) {
        issue(at, `a task cannot depend on itself ("${key}")`, 'self_dependency');
        structural = false;
      } else if (!byKey.has(key)) {
        const known = [...byKey.keys()];
        issue(
          at,
          `no task has the key "${key}"${known.length > 0 ? ` (keys: ${known.slice(0, 10).join(', ')})` : ' (no task has a key)'}`,
          'unknown_task_key',
        );
        structural = false;
      }
    });
    if (task.max_parallel !== undefined && task.for_each === undefined)
      issue(
        ['tasks', index, 'max_parallel'],
        'max_parallel applies to a for_each task only',
        'max_parallel_without_for_each',
      );
    const ceiling = definition.max_parallel ?? TASK_GRAPH_LIMITS.defaultMaxParallel;
    if (task.max_parallel !== undefined && task.max_parallel > ceiling)
      issue(
        ['tasks', index, 'max_parallel'],
        `must be at most the definition's max_parallel (${ceiling}${definition.max_parallel === undefined ? ', the default' : ''})`,
        'max_parallel_above_definition',
      );
  });
  if (!structural) return issues;

  const graph = buildTaskGraph(tasks);
  const cycle = findCycle(graph);
  if (cycle !== undefined) {
    const names = cycle.map((index) => tasks[index]!.key ?? `tasks[${index}]`);
    issue(
      ['tasks', cycle[0]!, 'depends_on'],
      `the tasks depend on each other in a cycle: ${[...names, names[0]].join(' → ')}`,
      'dependency_cycle',
    );
    return issues;
  }

  tasks.forEach((task, index) => {
    const ancestors = ancestorsOf(graph, index);
    const check = (reference: string, path: Array<string | number>): void => {
      const target = /^\d+$/.test(reference) ? Number(reference) : byKey.get(reference);
      if (target === undefined || target >= tasks.length) {
        issue(path, `reads tasks.${reference}, but no task has that key or index`, 'unknown_task_reference');
      } else if (!ancestors.has(target)) {
        issue(
          path,
          `reads tasks.${reference}, which is not a task this one depends on (directly or through others), so it may not have run yet`,
          'task_reference_not_an_ancestor',
        );
      }
    };
    for (const [text, path] of templateStrings(task.config, ['tasks', index, 'config']))
      for (const match of text.matchAll(TEMPLATE_TASK_REFERENCE)) check(match[1]!, path);
    for (const field of ['if', 'for_each'] as const) {
      const expression = task[field];
      if (expression === undefined) continue;
      for (const match of expression.matchAll(EXPRESSION_TASK_REFERENCE))
        check(match[1] ?? match[2] ?? match[3] ?? match[4]!, ['tasks', index, field]);
    }
  });
  return issues;
}

/** A cycle of task indices, or undefined when the graph has none. */
function findCycle(graph: TaskGraph): number[] | undefined {
  const state = new Map<number, 'visiting' | 'done'>();
  const path: number[] = [];
  const visit = (index: number): number[] | undefined => {
    const seen = state.get(index);
    if (seen === 'done') return undefined;
    if (seen === 'visiting') return path.slice(path.indexOf(index));
    state.set(index, 'visiting');
    path.push(index);
    for (const need of graph.nodes[index]!.needs) {
      const cycle = visit(need);
      if (cycle !== undefined) return cycle;
    }
    path.pop();
    state.set(index, 'done');
    return undefined;
  };
  for (const node of graph.nodes) {
    const cycle = visit(node.index);
    if (cycle === undefined) continue;
    // Each task in the list is needed by the next; rotated to start at the lowest index, so the answer is stable.
    const ordered = cycle.reverse();
    const first = ordered.indexOf(Math.min(...ordered));
    return [...ordered.slice(first), ...ordered.slice(0, first)];
  }
  return undefined;
}
