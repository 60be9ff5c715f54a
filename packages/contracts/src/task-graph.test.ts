import { describe, expect, it } from 'vitest';
import { ActivityDefinition } from './activity-definition';
import {
  buildTaskGraph,
  decideReadyTasks,
  taskGraphIssues,
  usesTaskGraph,
  type GraphTaskSpec,
  type TaskSettlement,
} from './task-graph';

const noop = (fields: Partial<GraphTaskSpec> = {}): GraphTaskSpec => ({ type: 'noop', ...fields });
const succeeded: TaskSettlement = { status: 'succeeded' };
const failed: TaskSettlement = { status: 'failed', continueOnFailure: false };

describe('the task graph of a definition', () => {
  it('is a straight line when no task names its needs: each task needs the one before it', () => {
    const graph = buildTaskGraph([noop(), noop(), noop()]);
    expect(graph.nodes.map((node) => node.needs)).toEqual([[], [0], [1]]);
    expect(usesTaskGraph([noop(), noop()])).toBe(false);
    // A key is a graph field: `{{ tasks.<key>.result }}` reads a graph run's map of tasks.
    expect(usesTaskGraph([noop(), noop({ key: 'named' })])).toBe(true);
  });

  it('starts every task with `depends_on: []` together and a join once all its needs settled', () => {
    const tasks = [
      noop({ key: 'a', depends_on: [] }),
      noop({ key: 'b', depends_on: [] }),
      noop({ key: 'c', depends_on: [] }),
      noop({ key: 'join', depends_on: ['a', 'b', 'c'] }),
    ];
    expect(usesTaskGraph(tasks)).toBe(true);
    const graph = buildTaskGraph(tasks);
    expect(decideReadyTasks(graph, new Map(), new Set()).map((d) => d.index)).toEqual([0, 1, 2]);
    const partly = new Map<number, TaskSettlement>([
      [0, succeeded],
      [1, succeeded],
    ]);
    expect(decideReadyTasks(graph, partly, new Set([2]))).toEqual([]);
    partly.set(2, succeeded);
    expect(decideReadyTasks(graph, partly, new Set())).toEqual([{ index: 3, decision: 'run' }]);
  });

  it('skips a default-rule task whose need failed, and that failure reaches the tasks after it', () => {
    const graph = buildTaskGraph([noop({ key: 'a', depends_on: [] }), noop({ key: 'b' }), noop({ key: 'c' })]);
    const [skipB] = decideReadyTasks(graph, new Map([[0, failed]]), new Set());
    expect(skipB).toEqual({
      index: 1,
      decision: 'skip',
      why: { reason: 'need_failed', rule: 'all_succeeded', needs: [0] },
    });
    const [skipC] = decideReadyTasks(
      graph,
      new Map<number, TaskSettlement>([
        [0, failed],
        [1, { status: 'skipped', why: { reason: 'need_failed', rule: 'all_succeeded', needs: [0] } }],
      ]),
      new Set(),
    );
    expect(skipC).toMatchObject({ index: 2, decision: 'skip', why: { reason: 'need_failed', needs: [1] } });
  });

  it('runs a default-rule task after a need that failed with continue_on_failure or was skipped by its condition', () => {
    const graph = buildTaskGraph([
      noop({ key: 'a', depends_on: [] }),
      noop({ key: 'b', depends_on: [] }),
      noop({ depends_on: ['a', 'b'] }),
    ]);
    const settled = new Map<number, TaskSettlement>([
      [0, { status: 'failed', continueOnFailure: true }],
      [1, { status: 'skipped', why: { reason: 'condition_false', expression: 'false', value: false } }],
    ]);
    expect(decideReadyTasks(graph, settled, new Set())).toEqual([{ index: 2, decision: 'run' }]);
  });

  it('runs an all_done task whatever its needs did, and an any_failed task only when one failed', () => {
    const tasks = [
      noop({ key: 'work', depends_on: [] }),
      noop({ key: 'cleanup', depends_on: ['work'], trigger_rule: 'all_done' }),
      noop({ key: 'alert', depends_on: ['work'], trigger_rule: 'any_failed' }),
    ];
    const graph = buildTaskGraph(tasks);
    expect(decideReadyTasks(graph, new Map([[0, failed]]), new Set())).toEqual([
      { index: 1, decision: 'run' },
      { index: 2, decision: 'run' },
    ]);
    expect(decideReadyTasks(graph, new Map([[0, succeeded]]), new Set())).toEqual([
      { index: 1, decision: 'run' },
      { index: 2, decision: 'skip', why: { reason: 'no_need_failed', rule: 'any_failed' } },
    ]);
  });

  it('counts a failure that stopped a need upstream as a failure for an any_failed task', () => {
    const graph = buildTaskGraph([
      noop({ key: 'a', depends_on: [] }),
      noop({ key: 'b' }),
      noop({ key: 'alert', depends_on: ['b'], trigger_rule: 'any_failed' }),
    ]);
    const settled = new Map<number, TaskSettlement>([
      [0, failed],
      [1, { status: 'skipped', why: { reason: 'need_failed', rule: 'all_succeeded', needs: [0] } }],
    ]);
    expect(decideReadyTasks(graph, settled, new Set())).toEqual([{ index: 2, decision: 'run' }]);
  });
});

describe('the graph checks at registration', () => {
  const issuesOf = (tasks: GraphTaskSpec[], max_parallel?: number) =>
    taskGraphIssues({ tasks, ...(max_parallel === undefined ? {} : { max_parallel }) }).map((issue) => ({
      path: issue.path.join('.'),
      code: issue.code,
    }));

  it('refuses a duplicate key, an unknown key and a task depending on itself, naming the field', () => {
    expect(issuesOf([noop({ key: 'a' }), noop({ key: 'a' })])).toEqual([
      { path: 'tasks.1.key', code: 'duplicate_task_key' },
    ]);
    expect(issuesOf([noop({ key: 'a', depends_on: ['nope'] })])).toEqual([
      { path: 'tasks.0.depends_on.0', code: 'unknown_task_key' },
    ]);
    expect(issuesOf([noop({ key: 'a', depends_on: ['a'] })])).toEqual([
      { path: 'tasks.0.depends_on.0', code: 'self_dependency' },
    ]);
  });

  it('refuses a cycle and says which tasks form it', () => {
    const issues = taskGraphIssues({
      tasks: [
        noop({ key: 'a', depends_on: ['c'] }),
        noop({ key: 'b', depends_on: ['a'] }),
        noop({ key: 'c', depends_on: ['b'] }),
      ],
    });
    expect(issues).toHaveLength(1);
    expect(issues[0]!.code).toBe('dependency_cycle');
    expect(issues[0]!.message).toMatch(/a → .* → a|b → .* → b|c → .* → c/);
  });

  it('refuses a template or a condition reading a task that is not an ancestor, and accepts one that is', () => {
    const body = { type: 'http', config: { url: 'https://example.com/{{ tasks.later.result }}' } };
    expect(issuesOf([{ ...body, key: 'first', depends_on: [] }, noop({ key: 'later', depends_on: [] })])).toEqual([
      { path: 'tasks.0.config.url', code: 'task_reference_not_an_ancestor' },
    ]);
    expect(
      issuesOf([noop({ key: 'a', depends_on: [] }), noop({ depends_on: [], if: 'tasks.a.status == "succeeded"' })]),
    ).toEqual([{ path: 'tasks.1.if', code: 'task_reference_not_an_ancestor' }]);
    expect(
      issuesOf([noop({ key: 'a', depends_on: [] }), noop({ key: 'b' }), noop({ if: 'tasks["a"].result == null' })]),
    ).toEqual([]);
    expect(issuesOf([noop({ if: 'tasks.ghost.result' })])).toEqual([
      { path: 'tasks.0.if', code: 'unknown_task_reference' },
    ]);
  });

  it('keeps index references of straight-line definitions valid when they read an earlier task', () => {
    const read = { type: 'http', config: { url: 'https://example.com/', body: { x: '{{ tasks.0.result }}' } } };
    expect(issuesOf([noop(), read])).toEqual([]);
    expect(issuesOf([read, noop()])).toEqual([
      { path: 'tasks.0.config.body.x', code: 'task_reference_not_an_ancestor' },
    ]);
    expect(issuesOf([noop(), { ...read, config: { ...read.config, body: { x: '{{ tasks.7.result }}' } } }])).toEqual([
      { path: 'tasks.1.config.body.x', code: 'unknown_task_reference' },
    ]);
  });

  it('refuses max_parallel on a task without for_each, or above the definition’s', () => {
    expect(issuesOf([noop({ max_parallel: 2 })])).toEqual([
      { path: 'tasks.0.max_parallel', code: 'max_parallel_without_for_each' },
    ]);
    expect(issuesOf([noop({ for_each: '[1]', max_parallel: 20 })], 5)).toEqual([
      { path: 'tasks.0.max_parallel', code: 'max_parallel_above_definition' },
    ]);
  });

  it('answers through the definition schema, so registration refuses the definition with the field named', () => {
    const result = ActivityDefinition.safeParse({
      name: 'graph',
      tasks: [
        { type: 'noop', key: 'a', depends_on: ['b'] },
        { type: 'noop', key: 'b', depends_on: ['a'] },
      ],
    });
    expect(result.success).toBe(false);
    expect(result.error!.issues[0]!.path).toEqual(['tasks', expect.any(Number), 'depends_on']);
    expect(result.error!.issues[0]!.message).toContain('cycle');
  });

  it('refuses a key that is not a plain lowercase name and 21 dependencies', () => {
    const badKey = ActivityDefinition.safeParse({ name: 'graph', tasks: [{ type: 'noop', key: 'Has Space' }] });
    expect(badKey.success).toBe(false);
    const many = ActivityDefinition.safeParse({
      name: 'graph',
      tasks: [{ type: 'noop', depends_on: Array.from({ length: 21 }, (_, i) => `k${i}`) }],
    });
    expect(many.success).toBe(false);
    expect(many.error!.issues[0]!.message).toContain('at most 20');
  });
});
