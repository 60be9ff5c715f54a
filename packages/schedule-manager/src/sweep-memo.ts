/**
 * Remembers, from one sweep to the next, values that only change with their
 * inputs: the desired schedule of a trigger (hashing, cron validation) and the
 * next fire time after a trigger's `processed_through` (cron evaluation in its
 * timezone). At ten thousand schedules these are most of a sweep's own CPU
 * time, and between two sweeps nearly none of their inputs change.
 *
 * Keyed by schedule id; an entry is reused only when its key (a string that
 * names every input) is the same, so a stale entry is never returned.
 */
export class SweepMemo<T> {
  private entries = new Map<string, { key: string; value: T }>();

  /** The remembered value for `id` when it was computed from the same `key`; else computes and remembers it. */
  get(id: string, key: string, compute: () => T): T {
    const hit = this.entries.get(id);
    if (hit !== undefined && hit.key === key) return hit.value;
    const value = compute();
    this.entries.set(id, { key, value });
    return value;
  }

  /** Forgets every id not in `live` (deleted schedules), so the memo never outgrows the schedules. */
  retainOnly(live: ReadonlySet<string>): void {
    for (const id of this.entries.keys()) if (!live.has(id)) this.entries.delete(id);
  }

  get size(): number {
    return this.entries.size;
  }
}

/** Lets timers and I/O callbacks (a tick's activity, a poll) run between chunks of a long synchronous loop. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
