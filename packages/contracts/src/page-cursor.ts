import { z } from 'zod';

/**
 * A page cursor: the `next_cursor` of the previous page. Absent or empty: the
 * first page (a client that keeps `cursor=` in its query string is asking
 * for no cursor). Any other value this API did not issue is a 400.
 */
/** What every list's `cursor` parameter documents. */
export const PAGE_CURSOR_DESCRIPTION =
  'The `next_cursor` of the previous page; absent or empty for the first page. A cursor this API did not issue is refused (400).';

export const pageCursor = (max?: number) =>
  (max === undefined ? z.string() : z.string().max(max, `a cursor is at most ${max} characters`))
    .optional()
    .transform((cursor) => (cursor === '' ? undefined : cursor))
    .meta({ description: PAGE_CURSOR_DESCRIPTION });
