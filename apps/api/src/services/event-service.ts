import { randomUUID } from 'node:crypto';
import {
  CloudEvent,
  DomainError,
  envelopeFromCloudEvent,
  EventEnvelope,
  EventEnvelopeInput,
  InvalidInputError,
  isCloudEvent,
  NotFoundError,
  reservedEventIdReason,
  type EventAcceptedResponse,
  type EventIdOrigin,
  type FieldIssue,
  type RouteOutcome,
} from '@activity-core/contracts';
import type { EventsRepository } from '@activity-core/db';
import type { EventIngest } from '@activity-core/router';
import type { z } from 'zod';
import { formatPath } from '../plugins/problem';

/** Ids the ingress assigns to events that arrive without one. */
export function assignEventId(): string {
  return `evt_${randomUUID()}`;
}

function issuesOf(error: z.ZodError, prefix: string): FieldIssue[] {
  return error.issues.map((issue) => ({ path: formatPath([...(prefix ? [prefix] : []), ...issue.path]), message: issue.message, code: issue.code }));
}

/**
 * Normalises one posted item (envelope or CloudEvent) and resolves its id:
 * body, else Idempotency-Key, else assigned here.
 */
export function normaliseEvent(
  body: unknown,
  options: { idempotencyKey?: string; receivedAt: Date; pathPrefix?: string },
): { envelope: EventEnvelope; idOrigin: EventIdOrigin } {
  const prefix = options.pathPrefix ?? '';
  let input: EventEnvelopeInput;
  if (isCloudEvent(body)) {
    const parsed = CloudEvent.safeParse(body);
    if (!parsed.success) throw new InvalidInputError('not a valid CloudEvent', issuesOf(parsed.error, prefix));
    input = envelopeFromCloudEvent(parsed.data, options.receivedAt);
  } else {
    const parsed = EventEnvelopeInput.safeParse(body);
    if (!parsed.success) throw new InvalidInputError('not a valid event envelope', issuesOf(parsed.error, prefix));
    input = parsed.data;
  }
  let idOrigin: EventIdOrigin;
  let eventId: string;
  if (input.event_id !== undefined) {
    if (options.idempotencyKey !== undefined && options.idempotencyKey !== input.event_id) {
      throw new InvalidInputError('the Idempotency-Key header and the event id in the body differ; send one id per event', [
        { path: 'headers.idempotency-key', message: 'differs from event_id' },
      ]);
    }
    eventId = input.event_id;
    idOrigin = 'body';
  } else if (options.idempotencyKey !== undefined) {
    eventId = options.idempotencyKey;
    idOrigin = 'idempotency_key';
  } else {
    eventId = assignEventId();
    idOrigin = 'assigned';
  }
  const reserved = reservedEventIdReason(eventId);
  if (reserved !== undefined) {
    throw new InvalidInputError(`event_id ${eventId} is reserved`, [{ path: idOrigin === 'body' ? formatPath([...(prefix ? [prefix] : []), 'event_id']) : 'headers.idempotency-key', message: reserved }]);
  }
  const envelope = EventEnvelope.safeParse({ ...input, event_id: eventId });
  if (!envelope.success) throw new InvalidInputError('invalid event id', issuesOf(envelope.error, prefix));
  return { envelope: envelope.data, idOrigin };
}

export type BatchItemResult =
  | ({ index: number; ok: true } & EventAcceptedResponse)
  | { index: number; ok: false; status: number; title: string; detail: string; errors?: FieldIssue[] };

export function createEventService(deps: { ingest: EventIngest; events: Pick<EventsRepository, 'get'> }) {
  return {
    async accept(body: unknown, options: { idempotencyKey?: string; receivedAt: Date }): Promise<EventAcceptedResponse> {
      const { envelope, idOrigin } = normaliseEvent(body, options);
      return await deps.ingest.ingest(envelope, idOrigin);
    },

    /** Each item stands alone: one bad item is reported and the others are accepted. */
    async acceptBatch(items: unknown[], receivedAt: Date): Promise<BatchItemResult[]> {
      const results: BatchItemResult[] = [];
      for (const [index, item] of items.entries()) {
        try {
          const { envelope, idOrigin } = normaliseEvent(item, { receivedAt, pathPrefix: `[${index}]` });
          results.push({ index, ok: true, ...(await deps.ingest.ingest(envelope, idOrigin)) });
        } catch (error) {
          if (!(error instanceof DomainError)) throw error;
          const status = error.code === 'event_id_reused' ? 422 : error.code === 'unavailable' ? 503 : 400;
          results.push({
            index,
            ok: false,
            status,
            title: error.code,
            detail: error.message,
            ...(error instanceof InvalidInputError ? { errors: error.issues } : {}),
          });
        }
      }
      return results;
    },

    /** The event as stored and what routing decided for it. */
    async get(eventId: string) {
      const found = await deps.events.get(eventId);
      if (found === undefined) throw new NotFoundError('event', eventId);
      const { event, routes } = found;
      return {
        event_id: event.eventId,
        envelope: event.payload as EventEnvelope,
        id_origin: event.idOrigin as EventIdOrigin,
        fingerprint: event.fingerprint,
        received_at: event.receivedAt.toISOString(),
        routing_state: event.routingState as 'pending' | 'routed',
        routing_attempts: event.routingAttempts,
        routed_at: event.routedAt?.toISOString() ?? null,
        last_error: event.lastError,
        routes: routes.map((route) => ({
          activity_id: route.activityId,
          activity_name: route.activityName,
          activity_version: route.activityVersion,
          workflow_id: route.workflowId,
          run_id: route.runId,
          outcome: route.outcome as RouteOutcome,
          detail: route.detail,
          decided_at: route.createdAt.toISOString(),
          updated_at: route.updatedAt.toISOString(),
        })),
      };
    },
  };
}

export type EventService = ReturnType<typeof createEventService>;
