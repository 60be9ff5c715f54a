import { describe, expect, it } from 'vitest';
import { compileTaskCondition, compileTaskList } from './compile-filter';
import { evaluateTaskExpression } from './evaluate-task-expression';

const bindings = {
  event: {
    event_type: 'order.created',
    data: {
      items: [
        { sku: 'a', qty: 2 },
        { sku: 'b', qty: 1 },
      ],
    },
  },
  run: { run_id: 'r', trigger_type: 'event' },
  tasks: { score: { status: 'succeeded', result: { body: { value: 0.3 } } } },
  input: {},
};

const compiled = (result: ReturnType<typeof compileTaskCondition>) => {
  if (!result.ok) throw new Error(result.error.message);
  return result.filter;
};

describe('task expressions', () => {
  it('decide a condition over an earlier task’s result', () => {
    expect(
      evaluateTaskExpression(compiled(compileTaskCondition('tasks.score.result.body.value < 0.5')), bindings),
    ).toEqual({
      outcome: 'value',
      value: true,
    });
  });

  it('give a for_each list back as plain JSON, ints as numbers', () => {
    const outcome = evaluateTaskExpression(
      compiled(compileTaskList('event.data.items.map(i, {"sku": i.sku, "n": i.qty * 10.0})')),
      bindings,
    );
    expect(outcome).toEqual({
      outcome: 'value',
      value: [
        { sku: 'a', n: 20 },
        { sku: 'b', n: 10 },
      ],
    });
  });

  it('refuse at compile time a variable a task cannot read, and a condition that is never a boolean', () => {
    const unknown = compileTaskCondition('trigger.event.data.x');
    expect(unknown.ok).toBe(false);
    expect(unknown.ok ? '' : unknown.error.message).toContain(
      'a task condition can read event, events (a batch), run, tasks and input',
    );
    expect(compileTaskCondition('"text"').ok).toBe(false);
    expect(compileTaskList('[1, 2, 3]').ok).toBe(true);
  });

  it('read a batch’s events as a list, and an empty list in a run of one event', () => {
    const list = compiled(compileTaskList('events.map(e, e.data.n)'));
    const events = [{ data: { n: 1 } }, { data: { n: 2 } }];
    expect(evaluateTaskExpression(list, { ...bindings, events })).toEqual({ outcome: 'value', value: [1, 2] });
    expect(evaluateTaskExpression(compiled(compileTaskCondition('size(events) == 0')), bindings)).toEqual({
      outcome: 'value',
      value: true,
    });
  });

  it('answer an error, not a value, for a missing key and for an evaluation over its cost limit', () => {
    expect(evaluateTaskExpression(compiled(compileTaskCondition('tasks.ghost.status == "x"')), bindings).outcome).toBe(
      'error',
    );
    const ten = '[1,2,3,4,5,6,7,8,9,10]';
    const nested = ['a', 'b', 'c', 'd', 'e', 'f'].reduceRight((inner, name) => `${ten}.map(${name}, ${inner})`, 'a');
    const costly = compiled(compileTaskList(nested));
    const outcome = evaluateTaskExpression(costly, bindings);
    expect(outcome.outcome).toBe('error');
  });
});
