/**
 * `@activity-core/client`: the typed client of the activity-core HTTP API.
 * Requests and answers are typed with the zod models of `@activity-core/contracts`;
 * errors are `ActivityCoreProblem`s; event posting retries under one Idempotency-Key.
 */
export {
  ActivityCoreClient,
  type ActivityListOptions,
  type AuditListOptions,
  type CallOptions,
  type ClientOptions,
  type FireListOptions,
  type RequestInput,
  type RetryInfo,
  type RunListOptions,
  type SendEventOptions,
  type SendEvents,
} from './client';
export {
  operations,
  type OperationName,
  type OperationSpec,
  type Operations,
  type ResultOf,
  type RetryMode,
} from './operations';
export { collect, pages, paginate, type PageOf } from './pagination';
export {
  ActivityCoreError,
  ActivityCoreNetworkError,
  ActivityCoreProblem,
  ConflictProblem,
  createProblem,
  EventIdReusedProblem,
  ForbiddenProblem,
  NotFoundProblem,
  PayloadTooLargeProblem,
  PROBLEM_TYPE_PREFIX,
  problemCode,
  problemFromAnswer,
  RateLimitedProblem,
  UnauthorizedProblem,
  UnavailableProblem,
  InvalidInputProblem,
  type FieldIssue,
  type ProblemCode,
  type ProblemDocument,
} from './problem';
export { DEFAULT_RETRY, type RetryOptions } from './retry';
export type { WebhookSourceInput, WebhookSourceRecord } from '@activity-core/webhooks';
export type {
  ActivityDefinitionInput,
  ActivityRecord,
  AuditEntry,
  BatchItemResult,
  CancelResponse,
  CodecPayloads,
  EventAcceptedResponse,
  EventInput,
  EventsResponse,
  FireExplanation,
  FireRecord,
  Readiness,
  RunDetail,
  RunRecord,
  RunWithTasks,
  StoredEvent,
} from '@activity-core/contracts';
