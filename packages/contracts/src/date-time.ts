import { z } from 'zod';

/** An RFC 3339 date-time with a time zone (`Z` or an offset), as every timestamp the API takes. */
export const Rfc3339DateTime = z.iso.datetime({
  offset: true,
  message: 'must be an RFC 3339 date-time with a timezone, e.g. 2026-03-01T09:00:00Z',
});
