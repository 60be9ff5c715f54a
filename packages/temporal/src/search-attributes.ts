import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';

/**
 * Custom search attributes on every run, filterable in the Temporal UI
 * (docs/operating.md, "The search-attribute check").
 */
export const ActivityIdKey = defineSearchAttributeKey('ActivityId', SearchAttributeType.KEYWORD);
const ActivityNameKey = defineSearchAttributeKey('ActivityName', SearchAttributeType.KEYWORD);
const TriggerTypeKey = defineSearchAttributeKey('TriggerType', SearchAttributeType.KEYWORD);
const ScheduledForKey = defineSearchAttributeKey('ScheduledFor', SearchAttributeType.DATETIME);
const EventIdKey = defineSearchAttributeKey('EventId', SearchAttributeType.KEYWORD);
/** On re-runs only: the run id of the original run they run again (`RerunOf = "<run_id>"` lists its re-runs). */
const RerunOfKey = defineSearchAttributeKey('RerunOf', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTE_KEYS = [
  ActivityIdKey,
  ActivityNameKey,
  TriggerTypeKey,
  ScheduledForKey,
  EventIdKey,
  RerunOfKey,
];

interface RunSearchAttributeValues {
  activityId: string;
  activityName: string;
  triggerType: string;
  scheduledFor?: Date;
  eventId?: string;
  rerunOf?: string;
}

export function runSearchAttributes(values: RunSearchAttributeValues): SearchAttributePair[] {
  const pairs: SearchAttributePair[] = [
    { key: ActivityIdKey, value: values.activityId },
    { key: ActivityNameKey, value: values.activityName },
    { key: TriggerTypeKey, value: values.triggerType },
  ];
  if (values.scheduledFor !== undefined) pairs.push({ key: ScheduledForKey, value: values.scheduledFor });
  if (values.eventId !== undefined) pairs.push({ key: EventIdKey, value: values.eventId });
  if (values.rerunOf !== undefined) pairs.push({ key: RerunOfKey, value: values.rerunOf });
  return pairs;
}
