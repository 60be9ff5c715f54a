import { z } from 'zod';
import { EventEnvelope, EventIdOrigin } from './event-envelope';
import { EventWaitSignalState, RouteOutcome } from './api';
import { DeadLetterRouteReason } from './dead-letters';

/**
 * An accepted event and its decision log (GET /v1/events/{event_id}): every
 * activity whose trigger matched its type and source and what happened, and
 * what it cancelled through `cancel_on`. Shared by the route and the typed
 * client, so the two cannot disagree.
 */
export const StoredEvent = z
  .object({
    event_id: z.string(),
    envelope: EventEnvelope,
    id_origin: EventIdOrigin,
    credential: z.string().nullable().meta({
      description:
        "Which credential delivered the event: `api_key:<key id>`, `ingest_key:<key id>` (12 hex digits of the key's SHA-256, never the key), `webhook:<source name>`, `emit:<run id>`, `system:<run id>` (a system event announcing that run's end), or `anonymous` while authentication is off; null for events stored before credentials were recorded.",
    }),
    hops: z.number().int().meta({
      description:
        'emit_event steps between this event and an external one; 0 for posted, webhook and cron-born events.',
    }),
    fingerprint: z.string(),
    received_at: z.string(),
    payload_expired_at: z.string().nullable().meta({
      description:
        "When the event's `data` was cleared by the payload retention (EVENT_PAYLOAD_RETENTION_DAYS); `envelope.data` is then `{}` and a replay answers 410. Null: the data is kept.",
    }),
    routing_state: z.enum(['pending', 'routed']),
    routing_attempts: z.number().int(),
    routed_at: z.string().nullable(),
    last_error: z.string().nullable(),
    routes: z.array(
      z.object({
        activity_id: z.string(),
        activity_name: z.string(),
        activity_version: z.number().int(),
        workflow_id: z.string(),
        run_id: z.string().meta({ description: 'For filtered routes: the run the event would have started.' }),
        outcome: RouteOutcome,
        /** Why a filter stopped the event, why the rate limit dropped it, until when the throttle delayed its run, or until when it is held (and who released or discarded it, or when it expired); null otherwise. */
        detail: z.string().nullable(),
        reason_code: DeadLetterRouteReason.nullable().meta({
          description:
            'For a `dead_letter` route: why its run could not be started (docs/recovery.md, "Dead letters"); null otherwise.',
        }),
        discarded_at: z.string().nullable().meta({
          description: 'When an operator discarded this dead letter (it is no longer listed); null otherwise.',
        }),
        /** A run the throttle delayed starts at this time (Temporal holds the start); null otherwise. */
        not_before: z.string().nullable(),
        decided_at: z.string(),
        updated_at: z.string(),
      }),
    ),
    cancel_on: z
      .object({
        scans: z.array(
          z.object({
            activity_id: z.string(),
            activity_name: z.string(),
            activity_version: z.number().int(),
            examined: z
              .number()
              .int()
              .meta({ description: 'Running runs of the activity the event was matched against.' }),
            capped: z.boolean().meta({
              description:
                'True when the scan stopped short: the activity had more running runs than one event examines (10,000), or the event spent its evaluation budget. The rest were left running.',
            }),
            matched: z
              .number()
              .int()
              .meta({ description: 'Runs whose match expression was true: each has an entry in `cancellations`.' }),
            errors: z.number().int().meta({
              description:
                'Runs on which no match expression could be evaluated (a missing key, a forgotten trigger event): not cancelled.',
            }),
            scanned_at: z.string(),
          }),
        ),
        cancellations: z.array(
          z.object({
            activity_id: z.string(),
            run_id: z.string(),
            workflow_id: z.string(),
            outcome: z.enum(['pending', 'cancel_requested', 'already_closed']).meta({
              description:
                '`pending` until Temporal took the request (retried like a pending route); `cancel_requested`: the run was asked to stop; `already_closed`: it had ended first.',
            }),
            detail: z.string().nullable().meta({
              description: 'Which cancel_on entry matched, e.g. `triggers[0].cancel_on[0] matched: <expression>`.',
            }),
            decided_at: z.string(),
            updated_at: z.string(),
          }),
        ),
      })
      .meta({
        description:
          "What the event cancelled through triggers' `cancel_on`: one scan per activity that names its type, and one entry per run it chose to cancel.",
      }),
    waits: z
      .object({
        scan: z
          .object({
            examined: z.number().int().meta({
              description: 'Open waits for its type, registered before the event was accepted, it was matched against.',
            }),
            capped: z.boolean().meta({
              description: 'True when more waits were open than one event examines; the rest were left waiting.',
            }),
            matched: z.number().int().meta({ description: 'Waits this event ended: each has an entry in `resumed`.' }),
            errors: z.number().int().meta({
              description: 'Waits whose match expression could not be evaluated on this event (e.g. a missing key).',
            }),
            scanned_at: z.string(),
          })
          .nullable()
          .meta({ description: 'Null when no wait_for_event task was waiting for its type when it was accepted.' }),
        resumed: z.array(
          z.object({
            wait_id: z.string(),
            run_id: z.string(),
            activity_id: z.string(),
            task_index: z.number().int(),
            signal: EventWaitSignalState,
            detail: z.string().nullable(),
            matched_at: z.string(),
          }),
        ),
      })
      .meta({
        description:
          'The wait_for_event tasks this event resumed: its one look at the waits open for its type, and each wait it matched.',
      }),
    replays: z
      .array(
        z.object({
          run_id: z.string(),
          workflow_id: z.string(),
          activity_id: z.string(),
          activity_version: z.number().int(),
          /** The event's own run of the activity (`activity-{activity_id}:{event_id}`) this replay is linked to. */
          replay_of: z.string(),
          attempt: z.number().int(),
          /** The replay run's recorded status; `pending` until its workflow has recorded its start. */
          status: z.string(),
          bulk_replay_id: z.string().nullable(),
          requested_by: z.string().nullable(),
          requested_at: z.string(),
        }),
      )
      .meta({
        description:
          'Forced replays of this event (`replay-{run_id}:{n}`). An `if_no_runs` replay is recorded on the route it opened (its `detail`).',
      }),
  })
  .meta({
    id: 'StoredEvent',
    description:
      'An accepted event and the decision log of its routing: every activity whose trigger matched its type and source, and what happened.',
  });
export type StoredEvent = z.output<typeof StoredEvent>;
