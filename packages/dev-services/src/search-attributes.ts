/**
 * The custom search attributes every run carries (docs/operating.md, "The
 * search-attribute check"). The dev server,
 * docker-compose and the start-up check all read this one list.
 */
export const REQUIRED_SEARCH_ATTRIBUTES = {
  ActivityId: 'Keyword',
  ActivityName: 'Keyword',
  TriggerType: 'Keyword',
  ScheduledFor: 'Datetime',
  EventId: 'Keyword',
  RerunOf: 'Keyword',
} as const;
