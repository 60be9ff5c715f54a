import { ActivityDefinition, type ActivityDefinitionInput, type ActivityRecord } from '@activity-core/contracts';
import { describe, expect, test } from 'vitest';
import type { LoadedDefinition } from './load';
import { diffValues, hasChanges, planChanges, sameDefinition, summarise } from './plan';

function desired(source: ActivityDefinitionInput, file = 'defs.yaml'): LoadedDefinition {
  const definition = ActivityDefinition.parse(source);
  return { name: definition.name, file, position: { line: 1, column: 1 }, source, definition, locate: () => undefined };
}

function live(source: ActivityDefinitionInput, version = 1): ActivityRecord {
  const definition = ActivityDefinition.parse(source);
  return {
    id: `00000000-0000-4000-8000-${String(version).padStart(12, '0')}`,
    name: definition.name,
    version,
    enabled: definition.enabled,
    definition,
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
  };
}

const noop = { name: 'a', tasks: [{ type: 'noop' as const }] };

describe('field diffs', () => {
  test('nested changes, additions and removals are named by their path', () => {
    expect(
      diffValues(
        { name: 'a', tasks: [{ type: 'http', config: { url: 'https://x', headers: {} } }], retry: { max_attempts: 3 } },
        {
          name: 'a',
          tasks: [{ type: 'http', config: { url: 'https://y', headers: { k: 'v' } } }, { type: 'noop' }],
          description: 'd',
        },
      ),
    ).toEqual([
      { path: 'description', kind: 'added', after: 'd' },
      { path: 'retry', kind: 'removed', before: { max_attempts: 3 } },
      { path: 'tasks[0].config.headers.k', kind: 'added', after: 'v' },
      { path: 'tasks[0].config.url', kind: 'changed', before: 'https://x', after: 'https://y' },
      { path: 'tasks[1]', kind: 'added', after: { type: 'noop' } },
    ]);
  });

  test('key order does not matter and undefined members count as absent', () => {
    expect(diffValues({ a: 1, b: { c: 2, d: 3 } }, { b: { d: 3, c: 2 }, a: 1, e: undefined })).toEqual([]);
  });

  test('a value that changes type is one change', () => {
    expect(diffValues({ body: { a: 1 } }, { body: [1] })).toEqual([
      { path: 'body', kind: 'changed', before: { a: 1 }, after: [1] },
    ]);
    expect(diffValues(1, 2)).toEqual([{ path: '', kind: 'changed', before: 1, after: 2 }]);
  });
});

describe('the plan', () => {
  test('a debounce added to or changed on a trigger is named field by field in the dry-run diff', () => {
    const trigger = { type: 'event' as const, event_type: 'contact.updated' };
    const before = live({ ...noop, triggers: [{ ...trigger, debounce: { period: '1m' } }] });
    const after = desired({ ...noop, triggers: [{ ...trigger, debounce: { period: '5m', key: 'data.contact_id' } }] });
    const [change] = planChanges([after], [before], { prune: false });
    expect(change).toMatchObject({
      kind: 'update',
      fields: [
        { path: 'triggers[0].debounce.key', kind: 'added', after: 'data.contact_id' },
        { path: 'triggers[0].debounce.period', kind: 'changed', before: '1m', after: '5m' },
      ],
    });
  });

  test('a batch added to or changed on a trigger is named field by field in the dry-run diff', () => {
    const trigger = { type: 'event' as const, event_type: 'order.completed' };
    const before = live({ ...noop, triggers: [{ ...trigger, batch: { max_size: 100, timeout: '1h' } }] });
    const after = desired({ ...noop, triggers: [{ ...trigger, batch: { max_size: 500, timeout: '24h' } }] });
    const [change] = planChanges([after], [before], { prune: false });
    expect(change).toMatchObject({
      kind: 'update',
      fields: [
        { path: 'triggers[0].batch.max_size', kind: 'changed', before: 100, after: 500 },
        { path: 'triggers[0].batch.timeout', kind: 'changed', before: '1h', after: '24h' },
      ],
    });
  });

  test('a definition equal to the live one after defaults is unchanged, whatever the file leaves to defaults', () => {
    const written = { name: 'a', tasks: [{ type: 'noop' as const }] };
    const stored = {
      name: 'a',
      enabled: true,
      triggers: [],
      tasks: [{ type: 'noop' as const, config: {}, continue_on_failure: false }],
    };
    expect(sameDefinition(live(stored).definition, desired(written).definition)).toBe(true);
    expect(planChanges([desired(written)], [live(stored)], { prune: false }).map((change) => change.kind)).toEqual([
      'unchanged',
    ]);
  });

  test('names decide create, update and unchanged; updates carry their field diff', () => {
    const changes = planChanges(
      [
        desired({ ...noop, name: 'new' }),
        desired({ ...noop, name: 'changed', description: 'now' }),
        desired({ ...noop, name: 'same' }),
      ],
      [live({ ...noop, name: 'changed' }, 4), live({ ...noop, name: 'same' })],
      { prune: false },
    );
    expect(changes.map((change) => [change.kind, change.name])).toEqual([
      ['create', 'new'],
      ['update', 'changed'],
      ['unchanged', 'same'],
    ]);
    const update = changes[1]!;
    expect(update.kind === 'update' && update.fields).toEqual([{ path: 'description', kind: 'added', after: 'now' }]);
    expect(summarise(changes)).toEqual({ create: 1, update: 1, unchanged: 1, delete: 0 });
    expect(hasChanges(changes)).toBe(true);
  });

  test('without prune, live activities the files do not name are left alone', () => {
    const changes = planChanges([desired(noop)], [live(noop), live({ ...noop, name: 'elsewhere' })], { prune: false });
    expect(changes.map((change) => change.kind)).toEqual(['unchanged']);
    expect(hasChanges(changes)).toBe(false);
  });

  test('prune deletes the live activities no file names, in name order, only under the prefix when one is given', () => {
    const liveOnes = [
      live(noop),
      live({ ...noop, name: 'team-z' }),
      live({ ...noop, name: 'team-b' }),
      live({ ...noop, name: 'other' }),
    ];
    expect(planChanges([desired(noop)], liveOnes, { prune: true }).map((change) => [change.kind, change.name])).toEqual(
      [
        ['unchanged', 'a'],
        ['delete', 'other'],
        ['delete', 'team-b'],
        ['delete', 'team-z'],
      ],
    );
    expect(
      planChanges([desired(noop)], liveOnes, { prune: true, prunePrefix: 'team-' }).map((change) => [
        change.kind,
        change.name,
      ]),
    ).toEqual([
      ['unchanged', 'a'],
      ['delete', 'team-b'],
      ['delete', 'team-z'],
    ]);
  });

  test('disabling an activity in its file is an update of enabled', () => {
    const changes = planChanges([desired({ ...noop, enabled: false })], [live(noop)], { prune: false });
    expect(changes[0]).toMatchObject({
      kind: 'update',
      fields: [{ path: 'enabled', kind: 'changed', before: true, after: false }],
    });
  });
});
