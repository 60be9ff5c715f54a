/**
 * The HTTP answers of the event path's domain outcomes: what the services
 * decide (accepted, duplicate, refused, failed) becomes a status and a body
 * here, at the edge, through the one table of domain error answers.
 */
import type { EventAcceptedResponse, FieldIssue } from '@activity-core/contracts';
import { fieldIssuesOf, httpStatusOf } from '../plugins/domain-errors';
import type { BatchItemOutcome, EventOutcome } from '../services/event-service';

/** An event is answered 202 whether it was stored now or is a redelivery: the body says which. */
export const EVENT_ACCEPTED_STATUS = 202 as const;

/** The status an event's outcome is answered with. */
export function eventOutcomeStatus(outcome: EventOutcome): typeof EVENT_ACCEPTED_STATUS {
  switch (outcome.kind) {
    case 'accepted':
    case 'duplicate':
      return EVENT_ACCEPTED_STATUS;
  }
}

/** One item of a batch's answer. */
export type BatchItemResult =
  | ({ index: number; ok: true } & EventAcceptedResponse)
  | {
      index: number;
      ok: false;
      status: number;
      title: string;
      detail: string;
      errors?: FieldIssue[];
      /** The item's event id when it had one (given, derived or assigned): resend the item with it, and a retry cannot double it. */
      event_id?: string;
    };

/**
 * A batch item's answer: a refused item gets the status a single event
 * refused for the same cause gets; an item that failed unexpectedly gets 500
 * and is told to be resent under its id.
 */
export function batchItemAnswer(outcome: BatchItemOutcome): BatchItemResult {
  switch (outcome.kind) {
    case 'accepted':
    case 'duplicate':
      return { index: outcome.index, ok: true, ...outcome.answer };
    case 'refused': {
      const issues = fieldIssuesOf(outcome.error);
      return {
        index: outcome.index,
        ok: false,
        status: httpStatusOf(outcome.error),
        title: outcome.error.code,
        detail: outcome.error.message,
        ...(issues === undefined ? {} : { errors: issues }),
        ...(outcome.event_id === undefined ? {} : { event_id: outcome.event_id }),
      };
    }
    case 'failed':
      return {
        index: outcome.index,
        ok: false,
        status: 500,
        title: 'internal',
        detail: `unexpected error (logged); the item may have been stored: resend it${outcome.event_id === undefined ? '' : ` with event_id ${outcome.event_id}`} so a retry cannot double it`,
        ...(outcome.event_id === undefined ? {} : { event_id: outcome.event_id }),
      };
  }
}
