import type { WebhookSourceRow } from '@activity-core/db';
import { describe, expect, test } from 'vitest';
import { createWebhookSourceCatalog } from './webhook-source-catalog';

function row(name: string, config: Record<string, unknown> = {}): WebhookSourceRow {
  const now = new Date();
  return { name, scheme: 'hmac_sha256', config: { secret: 'x', ...config }, createdAt: now, updatedAt: now };
}

/** The repository's two reads, with a change counter the test moves as a trigger would. */
function store(initial: WebhookSourceRow[]) {
  const state = { rows: initial, version: 1n as bigint | undefined, lists: 0, versionReads: 0 };
  return {
    state,
    change(rows: WebhookSourceRow[]) {
      state.rows = rows;
      if (state.version !== undefined) state.version += 1n;
    },
    currentVersion: async () => {
      state.versionReads++;
      return state.version;
    },
    list: async () => {
      state.lists++;
      return state.rows;
    },
  };
}

describe('the webhook source catalog', () => {
  test('reads the sources once per change, and the change counter once per call', async () => {
    const sources = store([row('github')]);
    const catalog = createWebhookSourceCatalog(sources);
    for (let i = 0; i < 5; i++) expect((await catalog.get('github'))?.name).toBe('github');
    expect(sources.state).toMatchObject({ lists: 1, versionReads: 5 });

    sources.change([row('github'), row('stripe')]);
    expect((await catalog.get('stripe'))?.name).toBe('stripe');
    expect(await catalog.get('github')).toBeDefined();
    expect(sources.state.lists).toBe(2);
  });

  test('a changed or removed source is what the next call sees', async () => {
    const sources = store([row('github', { secret: 'old' })]);
    const catalog = createWebhookSourceCatalog(sources);
    expect((await catalog.get('github'))?.config).toMatchObject({ secret: 'old' });

    sources.change([row('github', { secret: 'rotated' })]);
    expect((await catalog.get('github'))?.config).toMatchObject({ secret: 'rotated' });

    sources.change([]);
    expect(await catalog.get('github')).toBeUndefined();
  });

  test('custom event sources are reserved under the name of the source that stamps them', async () => {
    const catalog = createWebhookSourceCatalog(
      store([row('partner', { event_source: 'partner-feed' }), row('github')]),
    );
    expect(await catalog.reservedEventSourcesVersioned()).toEqual({
      version: 1n,
      reservedEventSources: new Map([['partner-feed', 'partner']]),
    });
  });

  test('peeking at the reserved sources reads nothing: undefined before the first load, then the last loaded, counter included', async () => {
    const sources = store([row('partner', { event_source: 'partner-feed' })]);
    const catalog = createWebhookSourceCatalog(sources);
    expect(catalog.peekReservedEventSources()).toBeUndefined();
    await catalog.get('partner');
    sources.change([row('partner', { event_source: 'partner-v2' })]);
    expect(catalog.peekReservedEventSources()).toEqual({
      version: 1n,
      reservedEventSources: new Map([['partner-feed', 'partner']]),
    });
    expect(sources.state).toMatchObject({ lists: 1, versionReads: 1 });
    expect((await catalog.reservedEventSourcesVersioned()).version).toBe(2n);
    expect(catalog.peekReservedEventSources()?.reservedEventSources).toEqual(new Map([['partner-v2', 'partner']]));
  });

  test('without a change counter every call reads the sources', async () => {
    const sources = store([row('github')]);
    sources.state.version = undefined;
    const catalog = createWebhookSourceCatalog(sources);
    await catalog.get('github');
    await catalog.get('github');
    expect(sources.state.lists).toBe(2);
  });
});
