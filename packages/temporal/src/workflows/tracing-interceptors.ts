/**
 * Workflow interceptors for OpenTelemetry traces (bundled as a workflow
 * interceptor module, see bundleWorkflows()).
 *
 * They delegate to `@temporalio/interceptors-opentelemetry`, but only for a
 * workflow whose start carried a trace context (the `_tracer-data` header a
 * tracing client adds). The decision rests on the workflow's own history, so
 * it replays the same on any worker, tracing or not; and a workflow started
 * without tracing (every history recorded before traces existed) runs
 * exactly the code it always ran: no spans, no extra yields, no random ids.
 *
 * The OpenTelemetry modules (some 350 of the bundle's modules) are loaded
 * only by a traced workflow, when it starts: a worker runs every workflow's
 * module code again for each workflow it creates or replays, and loading them
 * for untraced runs cost about 3 ms of CPU per workflow
 * (`npm run bench:workflow-replay`).
 */
import type {
  ActivityInput,
  ContinueAsNewInput,
  DisposeInput,
  GetLogAttributesInput,
  LocalActivityInput,
  Next,
  SignalWorkflowInput,
  StartChildWorkflowExecutionInput,
  WorkflowExecuteInput,
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptors,
  WorkflowInternalsInterceptor,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';

import type * as TracingWorkflow from '@temporalio/interceptors-opentelemetry/lib/workflow/index.js';

type TracingModule = typeof TracingWorkflow;

/** In the bundle (eager: no separate chunk), evaluated on first use, per workflow like any module. */
const loadTracing = (): Promise<TracingModule> =>
  import(/* webpackMode: "eager" */ '@temporalio/interceptors-opentelemetry/lib/workflow/index.js');

/** The header `@temporalio/interceptors-opentelemetry` carries the trace context in. */
export const TRACE_HEADER = '_tracer-data';

export const interceptors = (): WorkflowInterceptors => {
  // Per workflow execution: set once, from the start's headers.
  let tracing: TracingModule | undefined;
  let inboundTracing: InstanceType<TracingModule['OpenTelemetryInboundInterceptor']> | undefined;
  let outboundTracing: InstanceType<TracingModule['OpenTelemetryOutboundInterceptor']> | undefined;
  // Only called once `tracing` is loaded: a workflow is traced from its start (execute) on.
  const outbound = () => (outboundTracing ??= new tracing!.OpenTelemetryOutboundInterceptor());
  const traced = () => tracing !== undefined;

  const inbound: WorkflowInboundCallsInterceptor = {
    execute: (input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>) => {
      // Untraced: the very call it always was, no extra promise or yield.
      if (input.headers[TRACE_HEADER] === undefined) return next(input);
      return (async () => {
        tracing ??= await loadTracing();
        inboundTracing ??= new tracing.OpenTelemetryInboundInterceptor();
        return await inboundTracing.execute(input, next);
      })();
    },
  };
  const outboundInterceptor: WorkflowOutboundCallsInterceptor = {
    scheduleActivity: (input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) =>
      traced() ? outbound().scheduleActivity(input, next) : next(input),
    scheduleLocalActivity: (
      input: LocalActivityInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>,
    ) => (traced() ? outbound().scheduleLocalActivity(input, next) : next(input)),
    startChildWorkflowExecution: (
      input: StartChildWorkflowExecutionInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>,
    ) => (traced() ? outbound().startChildWorkflowExecution(input, next) : next(input)),
    continueAsNew: (input: ContinueAsNewInput, next: Next<WorkflowOutboundCallsInterceptor, 'continueAsNew'>) =>
      traced() ? outbound().continueAsNew(input, next) : next(input),
    signalWorkflow: (input: SignalWorkflowInput, next: Next<WorkflowOutboundCallsInterceptor, 'signalWorkflow'>) =>
      traced() ? outbound().signalWorkflow(input, next) : next(input),
    getLogAttributes: (
      input: GetLogAttributesInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'getLogAttributes'>,
    ) => (traced() ? outbound().getLogAttributes(input, next) : next(input)),
  };
  // Disables the sandbox's context manager at the end, if tracing made one.
  const internals: WorkflowInternalsInterceptor = {
    dispose: (input: DisposeInput, next: Next<WorkflowInternalsInterceptor, 'dispose'>) => {
      if (tracing === undefined) return next(input);
      void new tracing.OpenTelemetryInternalsInterceptor().dispose(input, next);
    },
  };
  return { inbound: [inbound], outbound: [outboundInterceptor], internals: [internals] };
};
