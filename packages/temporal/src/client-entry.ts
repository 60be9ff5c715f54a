/**
 * `@activity-core/temporal/client`: everything a process that talks to
 * Temporal as a client needs (the API, the router, the schedule manager, and
 * the worker's own client side). It loads no worker code: nothing here
 * imports `@temporalio/worker` or its native core bridge, and
 * test/temporal-entry-points.test.ts keeps it so.
 */
export {
  createRunStarter,
  type RunStarter,
  type StartOutcome,
  type StartRunOptions,
  type StartRunRequest,
} from './client/run-starter';
export {
  createCoalesceStarter,
  type CoalesceStarter,
  type StartCoalesceWindowRequest,
} from './client/coalesce-starter';
export { createRunCanceller, type CancelOutcome, type RunCanceller } from './client/run-canceller';
export {
  createWaitSignaller,
  type EventWaitMatchedSignal,
  type WaitSignaller,
  type WaitSignalOutcome,
} from './client/wait-signaller';
export {
  createRunOutcomeRecovery,
  type RecoveredOutcome,
  type RunOutcomeRecovery,
  type RunOutcomeRecoveryOptions,
} from './client/run-outcome-recovery';
export { checkSearchAttributes, MissingSearchAttributesError } from './client/search-attribute-check';
export { describeTemporalError, isPermanentRefusal, isTemporalUnreachable, StartTimeoutError } from './client/errors';
export {
  diagnoseTemporalConnectFailure,
  temporalConnectionOptions,
  TemporalConnectionSettingsError,
  type PemSource,
  type TemporalConnectionSettings,
} from './client/connection-options';
export { RUN_ACTIVITY_WORKFLOW, SCHEDULE_TICK_WORKFLOW, TASK_WORKFLOW } from './names';
export { SEARCH_ATTRIBUTE_KEYS, runSearchAttributes } from './search-attributes';
export {
  createEncryptionCodec,
  payloadFromJson,
  payloadToJson,
  PayloadKeyMissingError,
  ENCRYPTED_ENCODING,
  type JsonPayload,
  type PayloadKey,
} from './codec/encryption-codec';
export type { PayloadCodec } from '@temporalio/common';
export { startOtlpTracing, startTracing, tracer, TRACER_NAME, type Tracing, type TracingSettings } from './tracing';
/** The payloads of a schedule tick: what a Temporal Schedule passes its tick workflow, and what the tick activity is asked and answers. */
export type {
  ProcessScheduleTick,
  ProcessScheduleTickInput,
  ProcessScheduleTickResult,
  ScheduleTickInput,
} from './effects/schedule-tick';
