import type { EventEnvelope, Trigger } from '@activity-core/contracts';
import { describe, expect, it } from 'vitest';
import { buildDefinitionIndex, createDefinitionCache, type IndexableDefinition } from './definition-index';
import { decideForActivity } from './matching';

function def(id: string, triggers: Trigger[], version = 1): IndexableDefinition {
  return { id, name: `activity-${id}`, version, definition: { triggers } };
}

const ev = (event_type: string, event_source = 'shop'): Trigger => ({
  type: 'event',
  event_type,
  ...(event_source === 'any' ? {} : { source: event_source }),
});
const ids = (list: Array<{ id: string }>) => list.map((entry) => entry.id);

function envelope(event_type: string, source = 'shop', data: Record<string, unknown> = {}): EventEnvelope {
  return { event_id: 'e-1', event_type, source, occurred_at: '2026-01-01T00:00:00.000Z', data } as EventEnvelope;
}

/** What the full scan decided: every definition whose decision is not undefined, in order. */
function fullScan(rows: IndexableDefinition[], event: EventEnvelope): string[] {
  return rows.filter((row) => decideForActivity(row.definition.triggers, event) !== undefined).map((row) => row.id);
}

function indexed(rows: IndexableDefinition[], event: EventEnvelope): string[] {
  return buildDefinitionIndex(rows)
    .candidates(event.event_type)
    .filter((row) => decideForActivity(row.triggers, event) !== undefined)
    .map((row) => row.id);
}

describe('definition index', () => {
  it('finds a definition by its exact event type and no other', () => {
    const index = buildDefinitionIndex([def('a', [ev('order.paid', 'any')]), def('b', [ev('order.refunded', 'any')])]);
    expect(ids(index.candidates('order.paid'))).toEqual(['a']);
    expect(ids(index.candidates('order.refunded'))).toEqual(['b']);
    expect(index.candidates('order')).toEqual([]);
    expect(index.candidates('order.paid.extra')).toEqual([]);
  });

  it('finds prefix wildcards at every depth and the catch-all for every type, but a prefix not for the bare name', () => {
    const rows = [
      def('star', [ev('*', 'any')]),
      def('order', [ev('order.*', 'any')]),
      def('refund', [ev('order.refund.*', 'any')]),
      def('other', [ev('user.*', 'any')]),
    ];
    const index = buildDefinitionIndex(rows);
    expect(ids(index.candidates('order.paid'))).toEqual(['star', 'order']);
    expect(ids(index.candidates('order.refund.created'))).toEqual(['star', 'order', 'refund']);
    expect(ids(index.candidates('order'))).toEqual(['star']);
    expect(ids(index.candidates('orders.paid'))).toEqual(['star']);
  });

  it('lists a definition once, in registration order, however many of its triggers match', () => {
    const rows = [
      def('late', [ev('x.y', 'any')]),
      def('multi', [ev('x.y', 'any'), ev('x.*', 'any'), ev('*', 'any'), ev('x.y', 'other')]),
    ];
    expect(ids(buildDefinitionIndex(rows).candidates('x.y'))).toEqual(['late', 'multi']);
    expect(ids(buildDefinitionIndex([...rows].reverse()).candidates('x.y'))).toEqual(['multi', 'late']);
  });

  it('leaves the source to the decision: a trigger for another source is a candidate the decision drops', () => {
    const rows = [def('shop', [ev('order.paid', 'shop')]), def('crm', [ev('order.paid', 'crm')])];
    expect(ids(buildDefinitionIndex(rows).candidates('order.paid'))).toEqual(['shop', 'crm']);
    expect(indexed(rows, envelope('order.paid', 'crm'))).toEqual(['crm']);
  });

  it('does not index cron triggers', () => {
    const index = buildDefinitionIndex([def('cron', [{ type: 'cron', cron: '0 * * * *' } as Trigger])]);
    expect(index.candidates('*')).toEqual([]);
    expect(index.size).toBe(1);
  });

  it('decides exactly what a full scan of every definition decides', () => {
    const rows = [
      def('1', [ev('order.paid')]),
      def('2', [ev('order.*', 'any')]),
      def('3', [ev('*', 'crm')]),
      def('4', [{ type: 'event', event_type: 'order.paid', filter: 'data.amount > 10' }]),
      def('5', [ev('order.refund.*'), ev('user.created', 'any')]),
      def('6', [{ type: 'cron', cron: '0 * * * *' } as Trigger, ev('user.*')]),
      def('7', [ev('order.paid.late', 'any')]),
    ];
    for (const type of [
      'order.paid',
      'order',
      'order.refund.created',
      'user.created',
      'user.deleted',
      'x',
      'order.paid.late',
      'order.paidx',
    ]) {
      for (const source of ['shop', 'crm']) {
        const event = envelope(type, source, { amount: 5 });
        expect(indexed(rows, event), `${type} from ${source}`).toEqual(fullScan(rows, event));
      }
    }
  });
});

describe('definition cache', () => {
  function source(initial: IndexableDefinition[]) {
    const state = { version: 1n as bigint | undefined, rows: initial, loads: 0, versionReads: 0 };
    return {
      state,
      currentVersion: async () => {
        state.versionReads += 1;
        return state.version;
      },
      listRoutable: async () => {
        state.loads += 1;
        return state.rows;
      },
      change(rows: IndexableDefinition[]) {
        state.rows = rows;
        state.version = (state.version ?? 0n) + 1n;
      },
    };
  }

  it('loads once per version, not once per event', async () => {
    const store = source([def('a', [ev('order.paid', 'any')])]);
    const cache = createDefinitionCache(store);
    for (let i = 0; i < 5; i += 1) expect(ids((await cache.current()).candidates('order.paid'))).toEqual(['a']);
    expect(store.state.loads).toBe(1);
    expect(store.state.versionReads).toBe(5);
    store.change([def('a', [ev('order.paid', 'any')]), def('b', [ev('order.paid', 'any')])]);
    for (let i = 0; i < 5; i += 1) expect(ids((await cache.current()).candidates('order.paid'))).toEqual(['a', 'b']);
    expect(store.state.loads).toBe(2);
  });

  it('moves a definition updated to another event type, and drops one disabled or deleted', async () => {
    const store = source([def('a', [ev('order.paid', 'any')]), def('b', [ev('order.paid', 'any')])]);
    const cache = createDefinitionCache(store);
    expect(ids((await cache.current()).candidates('order.paid'))).toEqual(['a', 'b']);
    // Updated: version 2 of `a` listens to another type. Disabled `b` is no longer listed by the store.
    store.change([def('a', [ev('order.shipped', 'any')], 2)]);
    const index = await cache.current();
    expect(index.candidates('order.paid')).toEqual([]);
    expect(index.candidates('order.shipped').map((row) => [row.id, row.version])).toEqual([['a', 2]]);
  });

  it('shares one load between concurrent calls that find the same new version', async () => {
    const store = source([def('a', [ev('order.paid', 'any')])]);
    const cache = createDefinitionCache(store);
    await Promise.all(Array.from({ length: 10 }, () => cache.current()));
    expect(store.state.loads).toBe(1);
  });

  it('keeps the version read before the load, so a change committed during the load is picked up by the next call', async () => {
    const store = source([def('a', [ev('order.paid', 'any')])]);
    const racing = {
      currentVersion: store.currentVersion,
      listRoutable: async () => {
        const rows = await store.listRoutable();
        // A registration commits after the version was read and before (or while) the rows are read.
        if (store.state.loads === 1) store.change([...rows, def('b', [ev('order.paid', 'any')])]);
        return store.state.loads === 1 ? rows : store.state.rows;
      },
    };
    const cache = createDefinitionCache(racing);
    expect(ids((await cache.current()).candidates('order.paid'))).toEqual(['a']);
    expect(ids((await cache.current()).candidates('order.paid'))).toEqual(['a', 'b']);
    expect(store.state.loads).toBe(2);
  });

  it('hands out the index last loaded, with its version, without reading anything', async () => {
    const store = source([def('a', [ev('order.paid', 'any')])]);
    const cache = createDefinitionCache(store);
    expect(cache.peek()).toBeUndefined();
    await cache.currentVersioned();
    store.change([def('a', [ev('order.paid', 'any')]), def('b', [ev('order.paid', 'any')])]);
    const reads = store.state.versionReads;

    const peeked = cache.peek();

    expect(store.state.versionReads).toBe(reads);
    expect(peeked?.version).toBe(1n);
    expect(ids(peeked!.index.candidates('order.paid'))).toEqual(['a']);
    // The caller that finds it stale asks for the current one.
    const fresh = await cache.currentVersioned();
    expect(fresh.version).toBe(2n);
    expect(ids(fresh.index.candidates('order.paid'))).toEqual(['a', 'b']);
    expect(cache.peek()?.version).toBe(2n);
  });

  it('carries each definition row as loaded, for starting its run without another read', async () => {
    const row = def('a', [ev('order.paid', 'any')], 3);
    const cache = createDefinitionCache(source([row]));
    expect((await cache.current()).candidates('order.paid')[0]?.row).toBe(row);
  });

  it('reloads on every call when there is no version to compare', async () => {
    const store = source([def('a', [ev('order.paid', 'any')])]);
    store.state.version = undefined;
    const cache = createDefinitionCache(store);
    await cache.current();
    await cache.current();
    expect(store.state.loads).toBe(2);
  });

  it('tries again after a failed load instead of keeping the failure', async () => {
    const store = source([def('a', [ev('order.paid', 'any')])]);
    let fail = true;
    const cache = createDefinitionCache({
      currentVersion: store.currentVersion,
      listRoutable: async () => {
        if (fail) throw new Error('connection lost');
        return store.listRoutable();
      },
    });
    await expect(cache.current()).rejects.toThrow('connection lost');
    fail = false;
    expect(ids((await cache.current()).candidates('order.paid'))).toEqual(['a']);
  });
});
