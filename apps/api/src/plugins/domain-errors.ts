import {
  type DomainError,
  type DomainErrorCode,
  type FieldIssue,
  ForbiddenError,
  InvalidInputError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
} from '@activity-core/contracts';
import { problem, type ProblemBody, type ProblemKind } from './problem';

/** How the HTTP edge answers one domain error code. */
interface DomainErrorAnswer {
  status: number;
  /** The problem `type` (see PROBLEM_TYPES). */
  kind: ProblemKind;
  title: string;
}

/**
 * The one table from domain error code to HTTP answer. The error handler
 * reads it for a request that fails, and `POST /v1/events` for each batch
 * item it refuses, so an item refused for a cause gets the status a single
 * event refused for the same cause gets. A Record over every code: a new
 * code without a row here does not compile.
 */
export const DOMAIN_ERROR_ANSWERS: Readonly<Record<DomainErrorCode, DomainErrorAnswer>> = {
  invalid_input: { status: 400, kind: 'invalid_input', title: 'Invalid request' },
  unauthorized: { status: 401, kind: 'unauthorized', title: 'Unauthorized' },
  forbidden: { status: 403, kind: 'forbidden', title: 'Forbidden' },
  not_found: { status: 404, kind: 'not_found', title: 'Not found' },
  conflict: { status: 409, kind: 'conflict', title: 'Conflict' },
  gone: { status: 410, kind: 'gone', title: 'Gone' },
  payload_too_large: { status: 413, kind: 'payload_too_large', title: 'Payload too large' },
  unsupported_media_type: { status: 415, kind: 'unsupported_media_type', title: 'Unsupported media type' },
  event_id_reused: { status: 422, kind: 'event_id_reused', title: 'Event id reused with a different payload' },
  unavailable: { status: 503, kind: 'unavailable', title: 'Service unavailable' },
};

/** The HTTP status a domain error is answered with, alone or as a batch item. */
export function httpStatusOf(error: DomainError): number {
  return DOMAIN_ERROR_ANSWERS[error.code].status;
}

/** The field-level issues a domain error carries (invalid input, forbidden, too large, unsupported media type); undefined for the others. */
export function fieldIssuesOf(error: DomainError): FieldIssue[] | undefined {
  return error instanceof InvalidInputError ||
    error instanceof ForbiddenError ||
    error instanceof PayloadTooLargeError ||
    error instanceof UnsupportedMediaTypeError
    ? error.issues
    : undefined;
}

/** The problem+json body of a domain error (without `instance` and `request_id`, which the handler adds). */
export function problemOf(error: DomainError): ProblemBody {
  const { status, kind, title } = DOMAIN_ERROR_ANSWERS[error.code];
  const body = problem(kind, status, title, error.message, fieldIssuesOf(error));
  if (error.code !== 'unavailable') return body;
  // After the write began the event may be stored: the answer names its id (an assigned one too) for the retry.
  const eventId = (error as { eventId?: unknown }).eventId;
  return typeof eventId === 'string' ? { ...body, event_id: eventId } : body;
}
