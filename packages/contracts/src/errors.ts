import { z } from 'zod';

/**
 * Domain errors with stable codes. Services throw these; exactly one mapper
 * per boundary turns them into status codes or Temporal failures: at the HTTP
 * edge the table in apps/api/src/plugins/domain-errors.ts (read by the error
 * handler and by batch item answers alike), in the worker the activities'
 * failure conversion.
 */
export type DomainErrorCode =
  | 'not_found'
  | 'conflict'
  | 'invalid_input'
  | 'event_id_reused'
  | 'unauthorized'
  | 'forbidden'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'unavailable'
  | 'gone';

/**
 * One refused field of a request: where (`a.b[0].c` for body fields,
 * `params.id`, `querystring.cursor`, `header.idempotency-key`, `[i].field` in
 * a batch), what is wrong, and a stable code where there is one.
 */
export const FieldIssue = z.object({ path: z.string(), message: z.string(), code: z.string().optional() });
export type FieldIssue = z.infer<typeof FieldIssue>;

export abstract class DomainError extends Error {
  abstract readonly code: DomainErrorCode;
  override readonly name: string = this.constructor.name;
}

export class NotFoundError extends DomainError {
  readonly code = 'not_found';
  constructor(
    readonly resource: string,
    readonly id: string,
  ) {
    super(`${resource} ${id} does not exist`);
  }
}

export class ConflictError extends DomainError {
  readonly code = 'conflict';
}

export class InvalidInputError extends DomainError {
  readonly code = 'invalid_input';
  constructor(
    message: string,
    readonly issues: FieldIssue[] = [],
  ) {
    super(message);
  }
}

/** The same event id arrived with different content: the id was reused for another event. */
export class EventIdReusedError extends DomainError {
  readonly code = 'event_id_reused';
  constructor(readonly eventId: string) {
    super(
      `event_id ${eventId} was already accepted with a different payload; an event id (or Idempotency-Key) must identify one event`,
    );
  }
}

export class UnauthorizedError extends DomainError {
  readonly code = 'unauthorized';
}

/** The credential is valid but not allowed this (e.g. an ingest key outside its scope); issues name the field and what is allowed. */
export class ForbiddenError extends DomainError {
  readonly code = 'forbidden';
  constructor(
    message: string,
    readonly issues: FieldIssue[] = [],
  ) {
    super(message);
  }
}

/** Input over a size limit (413); the issues name the field and the limit. */
export class PayloadTooLargeError extends DomainError {
  readonly code = 'payload_too_large';
  constructor(
    message: string,
    readonly issues: FieldIssue[] = [],
  ) {
    super(message);
  }
}

/**
 * The request's Content-Type is not one the endpoint reads (415). `accepted`
 * lists the media types it does read (sent as `Accept-Post`); the issues name
 * the header and say what would work.
 */
export class UnsupportedMediaTypeError extends DomainError {
  readonly code = 'unsupported_media_type';
  constructor(
    message: string,
    readonly accepted: readonly string[],
    readonly issues: FieldIssue[] = [],
  ) {
    super(message);
  }
}

/** The resource existed but what the request needs of it is no longer kept (410), e.g. an event's data past its retention. */
export class GoneError extends DomainError {
  readonly code = 'gone';
}

/** A dependency (Postgres, Temporal) is down; the caller should retry later. */
export class UnavailableError extends DomainError {
  readonly code = 'unavailable';
  constructor(
    message: string,
    readonly retryAfterSeconds = 5,
  ) {
    super(message);
  }
}

export function assertNever(value: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(value)}`);
}
