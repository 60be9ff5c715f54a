/**
 * `@activity-core/temporal/worker`: what only a worker process needs, the
 * worker itself, the workflow bundle and the effects (Temporal activities). It loads
 * `@temporalio/worker` (and its native core bridge); processes that only start
 * workflows import `@activity-core/temporal/client` instead, and eslint keeps
 * the API, the router and the schedule manager from importing this.
 */
export {
  bundleWorkflows,
  createWorker,
  WORKFLOW_INTERCEPTOR_MODULES,
  WORKFLOWS_PATH,
  type CreateWorkerOptions,
  type PrebuiltWorkflowBundle,
} from './worker';
export { effectTracingInterceptors, workflowTracingSinks } from './worker-tracing';
export {
  createEffects,
  createRunOutcomeAnnouncer,
  ATTEMPT_ID_HEADER,
  IDEMPOTENCY_KEY_HEADER,
  RUN_ID_HEADER,
  EgressPolicy,
  type Effects,
  type EffectDeps,
  type EmitEvent,
  type EmitSystemEvent,
  type RunOutcomeAnnouncer,
} from './effects';
