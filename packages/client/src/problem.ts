/**
 * Errors the client throws. Every non-success HTTP answer becomes an
 * `ActivityCoreProblem` carrying the RFC 9457 problem document's fields
 * (`type`, `title`, `status`, `detail`, `instance`) and its extensions
 * (`request_id`, `errors`, `event_id`, anything else the server adds), plus
 * `retry_after` from the Retry-After header. `code` names the problem type;
 * common ones have their own subclass, so callers can `instanceof` or switch.
 * A request that never got an answer is an `ActivityCoreNetworkError`.
 */

import type { FieldIssue, Problem } from '@activity-core/contracts';

export type { FieldIssue };

/** Base class of everything the client throws on purpose. */
export class ActivityCoreError extends Error {
  override readonly name: string = 'ActivityCoreError';
}

/**
 * The problem `type` as a code: its name after the `urn:activity-core:problem:`
 * prefix in snake case, but `invalid_input` for `validation-error` (the name
 * the server's code gives that refusal) and `internal` for `internal-error`;
 * `unknown` for any other type.
 */
export type ProblemCode =
  | 'invalid_input'
  | 'invalid_json'
  | 'bad_request'
  | 'unauthorized'
  | 'forbidden'
  | 'invalid_signature'
  | 'invalid_webhook_payload'
  | 'not_found'
  | 'conflict'
  | 'gone'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'event_id_reused'
  | 'rate_limited'
  | 'unavailable'
  | 'internal'
  | 'unknown';

export const PROBLEM_TYPE_PREFIX = 'urn:activity-core:problem:';

const CODE_OF_TYPE: Readonly<Record<string, ProblemCode>> = {
  'validation-error': 'invalid_input',
  'invalid-json': 'invalid_json',
  'bad-request': 'bad_request',
  unauthorized: 'unauthorized',
  forbidden: 'forbidden',
  'invalid-signature': 'invalid_signature',
  'invalid-webhook-payload': 'invalid_webhook_payload',
  'not-found': 'not_found',
  conflict: 'conflict',
  gone: 'gone',
  'payload-too-large': 'payload_too_large',
  'unsupported-media-type': 'unsupported_media_type',
  'event-id-reused': 'event_id_reused',
  'rate-limited': 'rate_limited',
  unavailable: 'unavailable',
  'internal-error': 'internal',
};

/** For answers that are not problem documents (a proxy's 502 page): the code their status implies. */
const CODE_OF_STATUS: Readonly<Record<number, ProblemCode>> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  409: 'conflict',
  410: 'gone',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'event_id_reused',
  429: 'rate_limited',
  500: 'internal',
  502: 'unavailable',
  503: 'unavailable',
  504: 'unavailable',
};

export function problemCode(type: string, status: number): ProblemCode {
  if (type.startsWith(PROBLEM_TYPE_PREFIX)) return CODE_OF_TYPE[type.slice(PROBLEM_TYPE_PREFIX.length)] ?? 'unknown';
  if (type === 'about:blank') return CODE_OF_STATUS[status] ?? 'unknown';
  return 'unknown';
}

/** A problem document as sent (the `Problem` schema of contracts), with any extension the server adds. */
export type ProblemDocument = Problem & { [extension: string]: unknown };

export class ActivityCoreProblem extends ActivityCoreError {
  override readonly name: string = 'ActivityCoreProblem';
  readonly code: ProblemCode;
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string | undefined;
  readonly instance: string | undefined;
  readonly request_id: string | undefined;
  /** Field-level issues (validation, forbidden, payload too large); `[]` when the problem has none. */
  readonly errors: FieldIssue[];
  readonly event_id: string | undefined;
  /** Seconds, from the Retry-After header (429, 503). */
  readonly retry_after: number | undefined;
  /** The whole problem document as the server sent it, extensions included. */
  readonly problem: ProblemDocument;

  constructor(problem: ProblemDocument, retryAfterSeconds?: number) {
    super(problemMessage(problem));
    this.problem = problem;
    this.code = problemCode(problem.type, problem.status);
    this.type = problem.type;
    this.title = problem.title;
    this.status = problem.status;
    this.detail = problem.detail;
    this.instance = problem.instance;
    this.request_id = problem.request_id;
    this.errors = Array.isArray(problem.errors) ? problem.errors : [];
    this.event_id = problem.event_id;
    this.retry_after = retryAfterSeconds;
  }
}

function problemMessage(problem: ProblemDocument): string {
  const head = `${problem.status} ${problem.title}`;
  return problem.detail === undefined || problem.detail === '' ? head : `${head}: ${problem.detail}`;
}

/** 400 `validation-error` (code `invalid_input`) or `invalid-json`: `errors` names each offending field. */
export class InvalidInputProblem extends ActivityCoreProblem {
  override readonly name = 'InvalidInputProblem';
}
/** 401: missing or wrong key (or an unverified webhook delivery). */
export class UnauthorizedProblem extends ActivityCoreProblem {
  override readonly name = 'UnauthorizedProblem';
}
/** 403: the key may not do this (a scoped ingest key outside its scope). */
export class ForbiddenProblem extends ActivityCoreProblem {
  override readonly name = 'ForbiddenProblem';
}
/** 404: unknown or deleted resource. */
export class NotFoundProblem extends ActivityCoreProblem {
  override readonly name = 'NotFoundProblem';
}
/** 409: name taken, id of a deleted activity, disabled activity, no cron triggers. */
export class ConflictProblem extends ActivityCoreProblem {
  override readonly name = 'ConflictProblem';
}
/** 413: a body or an event's data over its limit. */
export class PayloadTooLargeProblem extends ActivityCoreProblem {
  override readonly name = 'PayloadTooLargeProblem';
}
/** 422: an event id that was accepted before with different content. */
export class EventIdReusedProblem extends ActivityCoreProblem {
  override readonly name = 'EventIdReusedProblem';
}
/** 429: over the rate limit; `retry_after` says when to try again. */
export class RateLimitedProblem extends ActivityCoreProblem {
  override readonly name = 'RateLimitedProblem';
}
/** 503 (or a proxy's 502/504): a dependency is down; safe to retry later. */
export class UnavailableProblem extends ActivityCoreProblem {
  override readonly name = 'UnavailableProblem';
}

const CLASS_OF_CODE: Partial<
  Record<ProblemCode, new (problem: ProblemDocument, retryAfter?: number) => ActivityCoreProblem>
> = {
  invalid_input: InvalidInputProblem,
  invalid_json: InvalidInputProblem,
  unauthorized: UnauthorizedProblem,
  invalid_signature: UnauthorizedProblem,
  forbidden: ForbiddenProblem,
  not_found: NotFoundProblem,
  conflict: ConflictProblem,
  payload_too_large: PayloadTooLargeProblem,
  event_id_reused: EventIdReusedProblem,
  rate_limited: RateLimitedProblem,
  unavailable: UnavailableProblem,
};

/** The problem for an answer, as the most specific class its code has. */
export function createProblem(problem: ProblemDocument, retryAfterSeconds?: number): ActivityCoreProblem {
  const Class = CLASS_OF_CODE[problemCode(problem.type, problem.status)] ?? ActivityCoreProblem;
  return new Class(problem, retryAfterSeconds);
}

function isProblemDocument(value: unknown): value is ProblemDocument {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const record = value as Record<string, unknown>;
  return typeof record.type === 'string' && typeof record.title === 'string' && typeof record.status === 'number';
}

/**
 * The problem an error answer carries. A body that is not a problem document
 * (a load balancer's HTML page, an empty 502) becomes an `about:blank`
 * problem with the HTTP status and the start of the body as `detail`.
 */
export function problemFromAnswer(answer: {
  status: number;
  statusText: string;
  contentType: string | null;
  body: string;
  retryAfterSeconds?: number;
}): ActivityCoreProblem {
  let parsed: unknown;
  if (answer.contentType !== null && /json/i.test(answer.contentType)) {
    try {
      parsed = JSON.parse(answer.body);
    } catch {
      parsed = undefined;
    }
  }
  if (isProblemDocument(parsed)) return createProblem(parsed, answer.retryAfterSeconds);
  const detail = answer.body.trim().slice(0, 500);
  return createProblem(
    {
      type: 'about:blank',
      title: answer.statusText || `HTTP ${answer.status}`,
      status: answer.status,
      ...(detail === '' ? {} : { detail }),
    },
    answer.retryAfterSeconds,
  );
}

/** No answer: the connection failed, was reset, or timed out, on every attempt the call was allowed. */
export class ActivityCoreNetworkError extends ActivityCoreError {
  override readonly name = 'ActivityCoreNetworkError';
  readonly code = 'network';
  constructor(
    message: string,
    /** How many requests were sent. */
    readonly attempts: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
