import type { ActivityDefinition, Trigger } from '@activity-core/contracts';

/** What the router needs of one enabled definition: enough to decide and to record the route. */
export interface IndexableDefinition {
  id: string;
  name: string;
  version: number;
  definition: Pick<ActivityDefinition, 'triggers'>;
}

export interface IndexedDefinition {
  id: string;
  name: string;
  version: number;
  triggers: readonly Trigger[];
  /** Position in the loaded list (registration order), so candidates come out in the order a full scan gave. */
  position: number;
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
export interface DefinitionIndex {
  /** Definitions with an event trigger whose type pattern matches `eventType`, each once, in registration order. */
  candidates(eventType: string): IndexedDefinition[];
  /** How many definitions the index holds. */
  readonly size: number;
}

function add(map: Map<string, IndexedDefinition[]>, key: string, entry: IndexedDefinition): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [entry]);
  else if (list.at(-1) !== entry) list.push(entry);
}

export function buildDefinitionIndex(rows: readonly IndexableDefinition[]): DefinitionIndex {
  const exact = new Map<string, IndexedDefinition[]>();
  const prefixes = new Map<string, IndexedDefinition[]>();
  const everything: IndexedDefinition[] = [];
  for (const [position, row] of rows.entries()) {
    const entry: IndexedDefinition = { id: row.id, name: row.name, version: row.version, triggers: row.definition.triggers, position };
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
    candidates(eventType: string): IndexedDefinition[] {
      const found: IndexedDefinition[][] = [];
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
      const unique = new Map<string, IndexedDefinition>();
      for (const list of found) for (const entry of list) unique.set(entry.id, entry);
      return [...unique.values()].sort((a, b) => a.position - b.position);
    },
  };
}

/** Where the cache gets its data: the definitions repository. */
export interface DefinitionSource {
  /** The definitions' change counter; `undefined` (no counter) means reload every time. */
  currentVersion(): Promise<bigint | undefined>;
  /** Every live, enabled definition, in registration order. */
  listEnabled(): Promise<IndexableDefinition[]>;
}

export interface DefinitionCache {
  /** The index as of now: one version read, and a reload only when the version moved. */
  current(): Promise<DefinitionIndex>;
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
 * share one load.
 */
export function createDefinitionCache(source: DefinitionSource, hooks: { onLoad?: (version: bigint | undefined, size: number) => void } = {}): DefinitionCache {
  let loaded: { version: bigint; index: DefinitionIndex } | undefined;
  let loading: { version: bigint; promise: Promise<DefinitionIndex> } | undefined;

  async function load(version: bigint | undefined): Promise<DefinitionIndex> {
    const index = buildDefinitionIndex(await source.listEnabled());
    hooks.onLoad?.(version, index.size);
    if (version !== undefined && (loaded === undefined || loaded.version < version)) loaded = { version, index };
    return index;
  }

  return {
    async current(): Promise<DefinitionIndex> {
      const version = await source.currentVersion();
      if (version === undefined) return load(undefined);
      if (loaded !== undefined && loaded.version >= version) return loaded.index;
      // A load started at this version or a later one has everything committed before this call.
      if (loading !== undefined && loading.version >= version) return loading.promise;
      const promise = load(version);
      const attempt = { version, promise };
      loading = attempt;
      try {
        return await promise;
      } finally {
        if (loading === attempt) loading = undefined;
      }
    },
  };
}
