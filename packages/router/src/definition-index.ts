import type { ActivityDefinition, Trigger } from '@activity-core/contracts';
import { createVersionedCache } from './versioned-cache';

/** What the router needs of one enabled definition: enough to decide and to record the route. */
export interface IndexableDefinition {
  id: string;
  name: string;
  version: number;
  /** False for a disabled definition that holds its events (`when_disabled.action: hold`). Absent: enabled. */
  enabled?: boolean;
  definition: Pick<ActivityDefinition, 'triggers' | 'when_disabled'>;
}

export interface IndexedDefinition<R extends IndexableDefinition = IndexableDefinition> {
  id: string;
  name: string;
  version: number;
  triggers: readonly Trigger[];
  /** Position in the loaded list (registration order), so candidates come out in the order a full scan gave. */
  position: number;
  /** The row as loaded: the whole definition of this version, so routing needs no second read to start its run. */
  row: R;
}

/**
 * The enabled definitions by the event types their event triggers name, so an
 * event's candidates are found without looking at every definition:
 *
 * - exact types (`order.paid`) in a map;
 * - prefix wildcards (`order.*`) in a map by prefix (`order.`), looked up
 *   once per `.` in the event type, so the cost grows with the event type's
 *   length, not with the number of wildcards;
 * - `*` in a list every event gets.
 *
 * A candidate has at least one event trigger whose type pattern matches;
 * source and filter are still decided by `decideForActivity`, so the
 * decision is exactly the full scan's. Cron triggers are not indexed.
 */
export interface DefinitionIndex<R extends IndexableDefinition = IndexableDefinition> {
  /** Definitions with an event trigger whose type pattern matches `eventType`, each once, in registration order. */
  candidates(eventType: string): IndexedDefinition<R>[];
  /** How many definitions the index holds. */
  readonly size: number;
  /**
   * Every enabled definition the index holds, in registration order (for
   * lookups the type maps do not serve, e.g. cancel_on). A disabled one that
   * holds its events is a candidate for its events only.
   */
  readonly entries: readonly IndexedDefinition<R>[];
}

function add<R extends IndexableDefinition>(
  map: Map<string, IndexedDefinition<R>[]>,
  key: string,
  entry: IndexedDefinition<R>,
): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [entry]);
  else if (list.at(-1) !== entry) list.push(entry);
}

export function buildDefinitionIndex<R extends IndexableDefinition>(rows: readonly R[]): DefinitionIndex<R> {
  const exact = new Map<string, IndexedDefinition<R>[]>();
  const prefixes = new Map<string, IndexedDefinition<R>[]>();
  const everything: IndexedDefinition<R>[] = [];
  const entries: IndexedDefinition<R>[] = [];
  for (const [position, row] of rows.entries()) {
    const entry: IndexedDefinition<R> = {
      id: row.id,
      name: row.name,
      version: row.version,
      triggers: row.definition.triggers,
      position,
      row,
    };
    if (row.enabled !== false) entries.push(entry);
    for (const trigger of entry.triggers) {
      if (trigger.type !== 'event') continue;
      const pattern = trigger.event_type;
      if (pattern === '*') {
        if (everything.at(-1) !== entry) everything.push(entry);
      } else if (pattern.endsWith('.*')) {
        add(prefixes, pattern.slice(0, -1), entry);
      } else {
        add(exact, pattern, entry);
      }
    }
  }

  return {
    size: rows.length,
    entries,
    candidates(eventType: string): IndexedDefinition<R>[] {
      const found: IndexedDefinition<R>[][] = [];
      const direct = exact.get(eventType);
      if (direct !== undefined) found.push(direct);
      if (everything.length > 0) found.push(everything);
      if (prefixes.size > 0) {
        // `order.*` matches every type starting with `order.`: each such prefix ends at a `.` of the type.
        for (let dot = eventType.indexOf('.'); dot !== -1; dot = eventType.indexOf('.', dot + 1)) {
          const list = prefixes.get(eventType.slice(0, dot + 1));
          if (list !== undefined) found.push(list);
        }
      }
      if (found.length === 0) return [];
      if (found.length === 1) return [...found[0]!];
      const unique = new Map<string, IndexedDefinition<R>>();
      for (const list of found) for (const entry of list) unique.set(entry.id, entry);
      return [...unique.values()].sort((a, b) => a.position - b.position);
    },
  };
}

/** Where the cache gets its data: the definitions repository. */
export interface DefinitionSource<R extends IndexableDefinition = IndexableDefinition> {
  /** The definitions' change counter; `undefined` (no counter) means reload every time. */
  currentVersion(): Promise<bigint | undefined>;
  /** Every live definition events are routed to (enabled, or disabled and holding its events), in registration order. */
  listRoutable(): Promise<R[]>;
}

/** An index with the change counter it was loaded at (undefined when there is no counter). */
export interface VersionedIndex<R extends IndexableDefinition = IndexableDefinition> {
  version: bigint | undefined;
  index: DefinitionIndex<R>;
}

export interface DefinitionCache<R extends IndexableDefinition = IndexableDefinition> {
  /** The index as of now: one version read, and a reload only when the version moved. */
  current(): Promise<DefinitionIndex<R>>;
  /** The same, with the version it was loaded at. */
  currentVersioned(): Promise<VersionedIndex<R>>;
  /**
   * The index last loaded and its version, without reading anything: for a
   * caller that checks the version in its own write (the event accept does)
   * and calls `currentVersioned()` when it moved. Undefined before the first
   * load, or when there is no version to check.
   */
  peek(): VersionedIndex<R> | undefined;
}

/**
 * Keeps one parsed index per process and checks, per call, the one-row
 * change counter the database bumps with every change to the definitions.
 *
 * The version is read before the definitions are loaded and stored with the
 * index: a change committed between the two reads is then in the loaded rows
 * or not, and either way the stored version is older than the counter, so
 * the next call loads again. A change committed before a call began is
 * always seen by that call. Concurrent calls that find the same new version
 * share one load (see createVersionedCache).
 */
export function createDefinitionCache<R extends IndexableDefinition>(
  source: DefinitionSource<R>,
  hooks: { onLoad?: (version: bigint | undefined, size: number) => void } = {},
): DefinitionCache<R> {
  const cache = createVersionedCache(
    {
      currentVersion: () => source.currentVersion(),
      load: async () => buildDefinitionIndex(await source.listRoutable()),
    },
    { onLoad: ({ version, value }) => hooks.onLoad?.(version, value.size) },
  );
  const versioned = ({
    version,
    value,
  }: {
    version: bigint | undefined;
    value: DefinitionIndex<R>;
  }): VersionedIndex<R> => ({ version, index: value });
  return {
    current: async () => (await cache.current()).value,
    currentVersioned: async () => versioned(await cache.current()),
    peek: () => {
      const loaded = cache.peek();
      return loaded === undefined ? undefined : versioned(loaded);
    },
  };
}
