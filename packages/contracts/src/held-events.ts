import { z } from 'zod';
import { HOLD_LIMITS, WhenDisabled } from './activity-definition';
import { ActivityRecord } from './api';
import { pageCursor } from './page-cursor';

/**
 * Held events (docs/recovery.md, "Held events"; ADR 0071): the events an
 * activity disabled with `when_disabled.action: hold` matched, each a route
 * `held` until it is released, discarded or its hold expires.
 */

const Timestamp = z.string().meta({ format: 'date-time' });

/** One held event of an activity, as listed (oldest first). */
export const HeldEvent = z
  .object({
    event_id: z.string(),
    event_type: z.string(),
    source: z.string(),
    received_at: Timestamp,
    /** When the hold runs out: the route is then recorded `expired`. */
    expires_at: Timestamp,
    /** The run a release starts: the event's own deterministic id. */
    workflow_id: z.string(),
    detail: z.string().nullable(),
  })
  .meta({ id: 'HeldEvent' });
export type HeldEvent = z.infer<typeof HeldEvent>;

export const HeldEventPage = z
  .object({ items: z.array(HeldEvent), next_cursor: z.string().nullable(), total: z.number().int() })
  .meta({ id: 'HeldEventPage' });
export type HeldEventPage = z.infer<typeof HeldEventPage>;

export const HeldEventListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: pageCursor(500),
});

/** Event ids one release or discard names; absent: every held event of the activity (a release: the oldest first, as many as one request carries out). */
const HeldEventIds = z
  .array(z.string().min(1).max(512))
  .min(1)
  .max(
    HOLD_LIMITS.maxPerRequest,
    `at most ${HOLD_LIMITS.maxPerRequest} event ids per request; send the rest in another request`,
  );

export const HeldReleaseRequest = z
  .object({ event_ids: HeldEventIds.optional() })
  .strict()
  .meta({ id: 'HeldReleaseRequest' });
export type HeldReleaseRequest = z.infer<typeof HeldReleaseRequest>;
/** The body is optional: none releases every held event. */
export const OptionalHeldReleaseRequest = HeldReleaseRequest.nullish().transform((body) => body ?? {});

export const HeldDiscardRequest = z
  .object({ event_ids: HeldEventIds.optional() })
  .strict()
  .meta({ id: 'HeldDiscardRequest' });
export type HeldDiscardRequest = z.infer<typeof HeldDiscardRequest>;
export const OptionalHeldDiscardRequest = HeldDiscardRequest.nullish().transform((body) => body ?? {});

/** What one release did. */
export const HeldReleaseResponse = z
  .object({
    activity_id: z.uuid(),
    /** Held routes this request made pending and dispatched, oldest first. */
    released: z.number().int(),
    /** Of those: runs started now, runs Temporal or the run records already had, and runs still pending (the dispatcher starts them). */
    started: z.number().int(),
    duplicate: z.number().int(),
    pending: z.number().int(),
    /** Released routes whose dispatch ended another way, by outcome: `coalescing` or `merged` (debounce), `dropped` (rate limit). */
    other: z.record(z.string(), z.number().int()),
    /** Events this request left held (a release carries out at most 1,000 per request, for at most 10 s): release again. */
    remaining: z.number().int(),
    /** Of the `event_ids` asked for: those not held by this activity (never held, or released, discarded or expired already). */
    not_held: z.array(z.string()),
  })
  .meta({ id: 'HeldReleaseResponse' });
export type HeldReleaseResponse = z.infer<typeof HeldReleaseResponse>;

export const HeldDiscardResponse = z
  .object({
    activity_id: z.uuid(),
    discarded: z.number().int(),
    remaining: z.number().int(),
    not_held: z.array(z.string()),
  })
  .meta({ id: 'HeldDiscardResponse' });
export type HeldDiscardResponse = z.infer<typeof HeldDiscardResponse>;

/** `POST /v1/activities/{id}/enable`: whether to release the events held while it was disabled. */
export const EnableActivityQuery = z.object({
  release_held: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .default(false)
    .meta({
      description:
        'Release the events held while the activity was disabled (as `POST …/held-events/release` does). Default false: they stay held, and the answer says how many.',
    }),
});

/** The activity, and its held events: how many are still held, and how many this request released. */
export const EnableActivityResponse = ActivityRecord.extend({
  held_events: z.object({
    held: z.number().int(),
    released: z.number().int(),
  }),
}).meta({ id: 'EnabledActivity' });
export type EnableActivityResponse = z.infer<typeof EnableActivityResponse>;

/** `POST /v1/activities/{id}/disable`: optionally, what its events do while it is off (written with the disable). */
export const DisableActivityRequest = z
  .object({ when_disabled: WhenDisabled.optional() })
  .strict()
  .meta({ id: 'DisableActivityRequest' });
export const OptionalDisableActivityRequest = DisableActivityRequest.nullish().transform((body) => body ?? {});
