/** A page of a list endpoint: newest first; `next_cursor` is null on the last page. */
export interface PageOf<T> {
  items: T[];
  next_cursor: string | null;
}

/** Every page, following `next_cursor` until it is null. */
export async function* pages<T>(
  fetchPage: (cursor: string | undefined) => Promise<PageOf<T>>,
): AsyncGenerator<PageOf<T>, void, undefined> {
  let cursor: string | undefined;
  for (;;) {
    const page = await fetchPage(cursor);
    yield page;
    if (page.next_cursor === null || page.items.length === 0) return;
    cursor = page.next_cursor;
  }
}

/** Every item of every page, fetched lazily: stop iterating and no further page is requested. */
export async function* paginate<T>(
  fetchPage: (cursor: string | undefined) => Promise<PageOf<T>>,
): AsyncGenerator<T, void, undefined> {
  for await (const page of pages(fetchPage)) yield* page.items;
}

/** The first `limit` items (all of them by default) of an async iterable, as an array. */
export async function collect<T>(items: AsyncIterable<T>, limit = Number.POSITIVE_INFINITY): Promise<T[]> {
  const out: T[] = [];
  if (limit <= 0) return out;
  for await (const item of items) {
    out.push(item);
    if (out.length >= limit) break;
  }
  return out;
}
