import { ActivityDefinition, DEFINITION_EXPRESSION_SITES } from '@activity-core/contracts';
import { describe, expect, test } from 'vitest';
import { definitionExpressionIssues } from './definition-expressions';

const definition = (extra: Record<string, unknown>) =>
  ActivityDefinition.parse({ name: 'expressions', tasks: [{ type: 'noop' }], ...extra });

describe('definitionExpressionIssues', () => {
  test('a definition whose expressions all compile has no issue', () => {
    expect(
      definitionExpressionIssues(
        definition({
          triggers: [
            {
              type: 'event',
              event_type: 'order.created',
              filter: 'data.amount > 100',
              cancel_on: [{ event_type: 'order.cancelled', match: 'event.data.id == trigger.event.data.id' }],
            },
          ],
          tasks: [{ type: 'wait_for_event', config: { event_type: 'order.paid', match: 'true', timeout: '1h' } }],
          concurrency: { limit: 1, key: 'data.customer' },
        }),
      ),
    ).toEqual([]);
  });

  test("an invalid filter is one issue at the field's path carrying the compile error and its position", () => {
    const issues = definitionExpressionIssues(
      definition({ triggers: [{ type: 'event', event_type: 'order.created', filter: 'amount > 100' }] }),
    );
    expect(issues).toEqual([
      {
        path: 'triggers[0].filter',
        code: 'custom',
        message:
          "unknown variable 'amount'; a filter can read event_id, event_type, source, subject, occurred_at, data",
        position: 0,
      },
    ]);
  });

  test('a wait_for_event match expression that does not compile is refused, naming the field', () => {
    for (const match of ['event.data.id ==', 'data.id == 1', '"text"']) {
      const waiting = definition({
        triggers: [{ type: 'event', event_type: 'order.created' }],
        tasks: [
          { type: 'noop' },
          { type: 'wait_for_event', config: { event_type: 'order.paid', match, timeout: '1h' } },
        ],
      });
      expect(
        definitionExpressionIssues(waiting).map((issue) => issue.path),
        match,
      ).toEqual(['tasks[1].config.match']);
    }
  });

  test('every expression site is compiled by its own kind, and the issues follow the order of the fields', () => {
    const issues = [
      ...definitionExpressionIssues(
        definition({
          triggers: [
            { type: 'event', event_type: 'a.b', cancel_on: [{ event_type: 'a.c', match: 'data.x == 1' }] },
            { type: 'event', event_type: 'a.b', filter: 'event.data.x == 1' },
            { type: 'event', event_type: 'a.b', debounce: { period: '1s', key: 'trigger.x' } },
          ],
          tasks: [
            { type: 'wait_for_event', config: { event_type: 'a.d', match: 'data.x ==', timeout: '1h' } },
            { type: 'noop', if: 'trigger.x', for_each: 'data.items' },
          ],
          concurrency: { limit: 1, key: 'event.data.customer' },
        }),
      ),
      // Pacing, debounce and batch do not combine on one activity: the batch and the pacing keys are definitions of their own.
      ...definitionExpressionIssues(
        definition({
          triggers: [{ type: 'event', event_type: 'a.b', batch: { max_size: 10, timeout: '1m', key: 'trigger.x' } }],
        }),
      ),
      ...definitionExpressionIssues(
        definition({
          throttle: { limit: 1, period: '1s', key: 'data.' },
          rate_limit: { limit: 1, period: '1s', key: 'trigger.x' },
          fairness: { key: 'event.data.tenant' },
        }),
      ),
    ];
    expect(issues.map((issue) => issue.path)).toEqual([
      'triggers[0].cancel_on[0].match',
      'triggers[1].filter',
      'triggers[2].debounce.key',
      'tasks[0].config.match',
      'tasks[1].if',
      'tasks[1].for_each',
      'concurrency.key',
      'triggers[0].batch.key',
      'throttle.key',
      'rate_limit.key',
      'fairness.key',
    ]);
    expect(issues[0]?.message).toMatch(/^unknown variable 'data'; a match expression can read event and trigger/);
    expect(issues[1]?.message).toMatch(/^unknown variable 'event'; a filter can read/);
    expect(issues[2]?.message).toMatch(/^unknown variable 'trigger'; a filter can read/);
    expect(issues[3]?.message).toMatch(/^syntax error/);
    expect(issues[4]?.message).toMatch(
      /^unknown variable 'trigger'; a task condition can read event, events \(a batch\), run, tasks and input/,
    );
    expect(issues[5]?.message).toMatch(
      /^unknown variable 'data'; a for_each expression can read event, events \(a batch\), run, tasks and input/,
    );
    expect(issues[6]?.message).toMatch(/^unknown variable 'event'; a filter can read/);
    expect(issues[7]?.message).toMatch(/^unknown variable 'trigger'; a filter can read/);
    expect(issues[10]?.message).toMatch(/^unknown variable 'event'; a filter can read/);
    expect(new Set(DEFINITION_EXPRESSION_SITES.map((site) => site.path.join('.'))).size).toBe(issues.length);
  });

  test('a new expression site is one row: its expressions are compiled by the kind the row names', () => {
    const sites = [...DEFINITION_EXPRESSION_SITES, { path: ['tasks', '*', 'if'], kind: 'filter' } as const];
    expect(definitionExpressionIssues({ tasks: [{ type: 'noop' }, { type: 'noop', if: 'nope(' }] }, sites)).toEqual([
      expect.objectContaining({ path: 'tasks[1].if', code: 'custom', message: expect.stringMatching(/^syntax error/) }),
    ]);
  });
});
