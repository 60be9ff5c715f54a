export { createActivities, ATTEMPT_ID_HEADER, IDEMPOTENCY_KEY_HEADER, RUN_ID_HEADER, type Activities, type ActivityDeps, type EmitEvent } from './activities';
export { EgressPolicy } from './activities';
export { createRunStarter, type RunStarter, type StartOutcome, type StartRunOptions, type StartRunRequest } from './client/run-starter';
export { checkSearchAttributes, MissingSearchAttributesError } from './client/search-attribute-check';
export {
  diagnoseTemporalConnectFailure,
  temporalConnectionOptions,
  TemporalConnectionSettingsError,
  type PemSource,
  type TemporalConnectionSettings,
} from './client/connection-options';
export { createRunReconciler, type ReconciledOutcome, type RunReconciler, type RunReconcilerOptions } from './client/run-reconciler';
export { RUN_ACTIVITY_WORKFLOW, SCHEDULE_TICK_WORKFLOW, TASK_WORKFLOW } from './names';
export type { ProcessScheduleTick, ProcessScheduleTickInput, ProcessScheduleTickResult, ScheduleTickInput } from './activities';
export { SEARCH_ATTRIBUTE_KEYS, runSearchAttributes } from './search-attributes';
export { bundleWorkflows, createWorker, WORKFLOW_INTERCEPTOR_MODULES, WORKFLOWS_PATH, type CreateWorkerOptions, type PrebuiltWorkflowBundle } from './worker';
export {
  createEncryptionCodec,
  payloadFromJson,
  payloadToJson,
  PayloadKeyMissingError,
  ENCRYPTED_ENCODING,
  type JsonPayload,
  type PayloadKey,
} from './codec/encryption-codec';
export { activityTracingInterceptors, startOtlpTracing, startTracing, tracer, TRACER_NAME, workflowTracingSinks, type Tracing, type TracingSettings } from './tracing';
