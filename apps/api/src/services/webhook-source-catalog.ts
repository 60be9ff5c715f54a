import type { WebhookSourceRow, WebhookSourcesRepository } from '@activity-core/db';
import { createVersionedCache, type Versioned } from '@activity-core/router';

/** Every configured webhook source, as one process last loaded them. */
export interface WebhookSourceSet {
  byName: ReadonlyMap<string, WebhookSourceRow>;
  /** Custom `event_source` → the name of the webhook source that stamps it on its deliveries. */
  reservedEventSources: ReadonlyMap<string, string>;
}

/**
 * The webhook sources, read on every delivery and every posted event, kept in
 * memory and re-read only when `webhook_sources_version` moved (one
 * single-row read per call; migration 0008 bumps it in every transaction that
 * changes a source). A source registered, replaced (a rotated secret),
 * re-sealed or removed through any process is therefore what the next call in
 * every process sees: the counter read comes after the change committed.
 */
export interface WebhookSourceCatalog {
  current(): Promise<WebhookSourceSet>;
  get(name: string): Promise<WebhookSourceRow | undefined>;
  /** The reserved custom event sources as of now (one counter read), with the counter they were loaded at. */
  reservedEventSourcesVersioned(): Promise<VersionedReservedSources>;
  /**
   * The reserved sources as last loaded, without reading anything: for a
   * caller whose later statement checks the counter itself
   * (`webhookSourcesVersion` of the events' accept). Undefined before the
   * first load.
   */
  peekReservedEventSources(): VersionedReservedSources | undefined;
}

export interface VersionedReservedSources {
  version: bigint | undefined;
  reservedEventSources: ReadonlyMap<string, string>;
}

function indexSources(rows: readonly WebhookSourceRow[]): WebhookSourceSet {
  const byName = new Map<string, WebhookSourceRow>();
  const reservedEventSources = new Map<string, string>();
  for (const row of rows) {
    byName.set(row.name, row);
    const custom = (row.config as { event_source?: unknown }).event_source;
    if (typeof custom === 'string') reservedEventSources.set(custom, row.name);
  }
  return { byName, reservedEventSources };
}

export function createWebhookSourceCatalog(
  sources: Pick<WebhookSourcesRepository, 'list' | 'currentVersion'>,
): WebhookSourceCatalog {
  const cache = createVersionedCache({
    currentVersion: () => sources.currentVersion(),
    load: async () => indexSources(await sources.list()),
  });
  const current = async (): Promise<WebhookSourceSet> => (await cache.current()).value;
  const reserved = ({ version, value }: Versioned<WebhookSourceSet>): VersionedReservedSources => ({
    version,
    reservedEventSources: value.reservedEventSources,
  });
  return {
    current,
    get: async (name) => (await current()).byName.get(name),
    reservedEventSourcesVersioned: async () => reserved(await cache.current()),
    peekReservedEventSources: () => {
      const loaded = cache.peek();
      return loaded === undefined ? undefined : reserved(loaded);
    },
  };
}
