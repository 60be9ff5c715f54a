import { InvalidInputError } from '@activity-core/contracts';

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/** The one answer to a cursor this API did not issue. */
export function invalidCursor(): InvalidInputError {
  return new InvalidInputError('cursor is not one this API issued', [
    { path: 'querystring.cursor', message: 'invalid cursor' },
  ]);
}

/**
 * Keyset pagination: decodes the request's cursor, fetches one row more than
 * the page holds (that extra row is how "there is a next page" is known
 * without counting), and encodes the next cursor from the page's last row.
 */
export async function keysetPage<C, Row, Item>(options: {
  limit: number;
  cursor: string | undefined;
  /** Returns undefined for a cursor this API did not issue. */
  decode: (cursor: string) => C | undefined;
  encode: (last: Row) => string;
  fetch: (query: { limit: number; cursor: C | undefined }) => Promise<Row[]>;
  toItem: (row: Row) => Item;
}): Promise<Page<Item>> {
  let cursor: C | undefined;
  if (options.cursor !== undefined) {
    cursor = options.decode(options.cursor);
    if (cursor === undefined) throw invalidCursor();
  }
  const rows = await options.fetch({ limit: options.limit + 1, cursor });
  const page = rows.slice(0, options.limit);
  const last = page.at(-1);
  return {
    items: page.map(options.toItem),
    next_cursor: rows.length > options.limit && last !== undefined ? options.encode(last) : null,
  };
}
