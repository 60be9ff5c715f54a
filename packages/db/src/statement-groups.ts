import { answeredWithError } from './errors';

/** A row a grouped statement answers for one item: `ord` is the item's place in the group. */
export interface GroupRow {
  ord: number;
}

interface Waiting<Item, Row> {
  item: Item;
  resolve: (row: Row) => void;
  reject: (error: unknown) => void;
}

/**
 * Items asked for in the same turn of the event loop go to Postgres as one
 * statement and one commit, in groups of at most `max` with distinct keys
 * (`keyOf`). A busy process sends statements for tens of items; an idle
 * one only ever sends groups of one.
 *
 * `run` runs one statement for a group and answers one row per item, in
 * order, each carrying its item's `ord`. Every caller gets its own row.
 *
 * One statement never holds a key twice: a second item with the same key
 * goes in another group, whose statement waits for this one's locks (or the
 * other way round). When Postgres answers a group with an error (a value it
 * refused, a lock or statement timeout on one item's row, a deadlock), the
 * statement rolled back and nothing of it is stored, so every item runs
 * again alone and only the one at fault fails. A connection lost without an
 * answer may have committed the group: that is every item's own answer, as
 * it would have been alone.
 */
export function createStatementGroups<Item, Row extends GroupRow>(options: {
  /** Names the statement in the error when a row is missing. */
  name: string;
  max: number;
  keyOf: (item: Item) => string;
  run: (items: readonly Item[]) => Promise<readonly Row[]>;
}): (item: Item) => Promise<Row> {
  let waiting: Waiting<Item, Row>[] = [];
  let flushScheduled = false;

  function flush(): void {
    flushScheduled = false;
    while (waiting.length > 0) {
      const group: Waiting<Item, Row>[] = [];
      const later: Waiting<Item, Row>[] = [];
      const keys = new Set<string>();
      for (const entry of waiting) {
        const key = options.keyOf(entry.item);
        if (group.length < options.max && !keys.has(key)) {
          keys.add(key);
          group.push(entry);
        } else later.push(entry);
      }
      waiting = later;
      void runGroup(group);
    }
  }

  async function runGroup(group: readonly Waiting<Item, Row>[]): Promise<void> {
    let rows: readonly Row[];
    try {
      rows = await options.run(group.map((entry) => entry.item));
    } catch (error) {
      if (group.length > 1 && answeredWithError(error)) {
        for (const entry of group) void runGroup([entry]);
        return;
      }
      for (const entry of group) entry.reject(error);
      return;
    }
    for (const [ord, entry] of group.entries()) {
      const row = rows[ord];
      if (row?.ord === ord) entry.resolve(row);
      else entry.reject(new Error(`${options.name} for ${options.keyOf(entry.item)} returned no row of its own`));
    }
  }

  return (item: Item) =>
    new Promise<Row>((resolve, reject) => {
      waiting.push({ item, resolve, reject });
      if (!flushScheduled) {
        flushScheduled = true;
        setImmediate(flush);
      }
    });
}
