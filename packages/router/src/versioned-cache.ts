/**
 * A value derived from some rows, kept in memory and reloaded only when a
 * one-row change counter in the database (bumped by a trigger in every
 * changing transaction) has moved.
 */
export interface VersionedSource<T> {
  /** The change counter; `undefined` (no counter) means reload every time. */
  currentVersion(): Promise<bigint | undefined>;
  /** Reads the rows and builds the value. */
  load(): Promise<T>;
}

export interface Versioned<T> {
  /** The counter the value was loaded at (read before the load); undefined when there is no counter. */
  version: bigint | undefined;
  value: T;
}

export interface VersionedCache<T> {
  /** The value as of now: one counter read, and a reload only when the counter moved. */
  current(): Promise<Versioned<T>>;
  /**
   * The value last loaded, without reading anything: for callers that check
   * the counter themselves in a later statement (and call `current()` when
   * it moved). Undefined before the first load, or when there is no counter.
   */
  peek(): Versioned<T> | undefined;
}

/**
 * The counter is read before the rows and stored with the value: a change
 * committed between the two reads is then in the loaded rows or not, and
 * either way the stored counter is older than the database's, so the next
 * call loads again. A change committed before a call began is always seen by
 * that call. Concurrent calls that find the same new counter share one load;
 * a failed load is not kept.
 */
export function createVersionedCache<T>(
  source: VersionedSource<T>,
  hooks: { onLoad?: (loaded: Versioned<T>) => void } = {},
): VersionedCache<T> {
  let loaded: (Versioned<T> & { version: bigint }) | undefined;
  let loading: { version: bigint; promise: Promise<Versioned<T>> } | undefined;

  async function load(version: bigint | undefined): Promise<Versioned<T>> {
    const result = { version, value: await source.load() };
    hooks.onLoad?.(result);
    if (version !== undefined && (loaded === undefined || loaded.version < version))
      loaded = { version, value: result.value };
    return result;
  }

  return {
    peek: () => loaded,
    async current(): Promise<Versioned<T>> {
      const version = await source.currentVersion();
      if (version === undefined) return load(undefined);
      if (loaded !== undefined && loaded.version >= version) return loaded;
      // A load started at this counter or a later one has everything committed before this call.
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
