import { z } from 'zod';
import { pageCursor } from './page-cursor';
import { RouteOutcome } from './api';

const Timestamp = z.string().meta({ format: 'date-time' });

/**
 * Why an accepted event's route could not become its run (docs/recovery.md,
 * "Dead letters"). The first four are route outcome `dead_letter` with this
 * reason; `filter_error` is its own route outcome, listed with the dead
 * letters because it too is a run the event did not get through an error on
 * its data.
 * - `definition_deleted`: the activity was deleted (or its version is
 *   missing) before the route's run was started;
 * - `start_refused`: Temporal refused the start for good (an invalid
 *   argument, such as an input over its payload size limit), not
 *   "unreachable" and not "already started";
 * - `retry_budget_exhausted`: the start kept failing with answers from
 *   Temporal (or our own store) past the routing retry budget
 *   (ROUTING_RETRY_MAX_ATTEMPTS, ROUTING_RETRY_MAX_AGE);
 * - `not_matched`: a retry found the activity no longer matches the event
 *   (disabled, or its trigger changed) — retry it again once it does;
 * - `filter_error`: the trigger's filter could not be evaluated on the event.
 */
export const DeadLetterReason = z.enum([
  'definition_deleted',
  'start_refused',
  'retry_budget_exhausted',
  'not_matched',
  'filter_error',
]);
export type DeadLetterReason = z.infer<typeof DeadLetterReason>;

/** The reasons a route of outcome `dead_letter` carries (`filter_error` is its own outcome). */
export const DEAD_LETTER_ROUTE_REASONS = [
  'definition_deleted',
  'start_refused',
  'retry_budget_exhausted',
  'not_matched',
] as const satisfies readonly DeadLetterReason[];
export const DeadLetterRouteReason = z.enum(DEAD_LETTER_ROUTE_REASONS);
export type DeadLetterRouteReason = z.infer<typeof DeadLetterRouteReason>;

/** Most dead letters one retry or discard request acts on; a filter matching more acts on the oldest this many. */
export const MAX_DEAD_LETTERS_PER_REQUEST = 100;

const ActivityIdParam = z
  .uuid()
  .transform((id) => id.toLowerCase())
  .optional();

export const DeadLetterListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: pageCursor(200),
  activity_id: ActivityIdParam,
  reason: DeadLetterReason.optional(),
});
export type DeadLetterListQuery = z.output<typeof DeadLetterListQuery>;

export const DeadLetter = z
  .object({
    event_id: z.string(),
    activity_id: z.uuid(),
    activity_name: z.string(),
    activity_version: z.number().int().meta({ description: 'The definition version the route was last planned on.' }),
    event_type: z.string(),
    workflow_id: z.string().meta({ description: "The run the event should have become (the event's own id)." }),
    run_id: z.uuid(),
    reason: DeadLetterReason,
    detail: z.string().nullable().meta({ description: "What failed: Temporal's refusal, the filter's error, …" }),
    attempts: z.number().int().meta({
      description:
        'How many times the route became a dead letter: 1, plus one for every retry that failed again (0 for a `filter_error`, which never retried).',
    }),
    received_at: Timestamp,
    dead_lettered_at: Timestamp,
  })
  .meta({ id: 'DeadLetter' });
export type DeadLetter = z.infer<typeof DeadLetter>;

export const DeadLetterPage = z
  .object({ items: z.array(DeadLetter), next_cursor: z.string().nullable() })
  .meta({ id: 'DeadLetterPage' });
export type DeadLetterPage = z.infer<typeof DeadLetterPage>;

/**
 * Which dead letters a retry or discard acts on: one (`event_id` and
 * `activity_id`), or every one a `filter` selects (oldest first, at most
 * MAX_DEAD_LETTERS_PER_REQUEST; `more` in the answer says whether others are left).
 */
export const DeadLetterSelection = z
  .object({
    event_id: z.string().min(1).max(200).optional(),
    activity_id: z
      .uuid()
      .transform((id) => id.toLowerCase())
      .optional(),
    filter: z
      .object({
        activity_id: z
          .uuid()
          .transform((id) => id.toLowerCase())
          .optional(),
        reason: DeadLetterReason.optional(),
      })
      .strict()
      .optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    const one = body.event_id !== undefined || body.activity_id !== undefined;
    if (one && body.filter !== undefined)
      ctx.addIssue({ code: 'custom', path: ['filter'], message: 'give event_id and activity_id, or filter, not both' });
    else if (one && (body.event_id === undefined || body.activity_id === undefined))
      ctx.addIssue({
        code: 'custom',
        path: [body.event_id === undefined ? 'event_id' : 'activity_id'],
        message: 'one dead letter is named by both event_id and activity_id',
      });
    else if (!one && body.filter === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['filter'],
        message: 'name one dead letter (event_id and activity_id) or give a filter ({} for all)',
      });
  })
  .meta({ id: 'DeadLetterSelection' });
export type DeadLetterSelection = z.output<typeof DeadLetterSelection>;

export const DeadLetterRetried = z.object({
  event_id: z.string(),
  activity_id: z.uuid(),
  activity_name: z.string(),
  workflow_id: z.string(),
  outcome: RouteOutcome.meta({
    description:
      "The route after the retry: `started` (the run started under the event's own id), `duplicate` (it had run already), `pending` (Temporal did not answer; the dispatcher starts it), `dead_letter` again (see `reason`), or what today's definition decides (`filtered`, `filter_error`, `coalescing`, `dropped`, …).",
  }),
  reason: DeadLetterReason.nullable(),
  detail: z.string().nullable(),
});
export type DeadLetterRetried = z.infer<typeof DeadLetterRetried>;

export const DeadLetterRetryResponse = z
  .object({
    retried: z.array(DeadLetterRetried),
    more: z.boolean().meta({ description: 'More dead letters match the filter than one request takes (100).' }),
  })
  .meta({ id: 'DeadLetterRetryResponse' });
export type DeadLetterRetryResponse = z.infer<typeof DeadLetterRetryResponse>;

export const DeadLetterDiscardResponse = z
  .object({
    discarded: z.array(z.object({ event_id: z.string(), activity_id: z.uuid(), reason: DeadLetterReason })),
    more: z.boolean().meta({ description: 'More dead letters match the filter than one request takes (100).' }),
  })
  .meta({ id: 'DeadLetterDiscardResponse' });
export type DeadLetterDiscardResponse = z.infer<typeof DeadLetterDiscardResponse>;
