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
 */
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow/index.js';
import type {
  ActivityInput,
  ContinueAsNewInput,
  GetLogAttributesInput,
  LocalActivityInput,
  Next,
  SignalWorkflowInput,
  StartChildWorkflowExecutionInput,
  WorkflowExecuteInput,
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptors,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';

/** The header `@temporalio/interceptors-opentelemetry` carries the trace context in. */
export const TRACE_HEADER = '_tracer-data';

export const interceptors = (): WorkflowInterceptors => {
  // Per workflow execution: set once, from the start's headers.
  let traced = false;
  let inboundTracing: OpenTelemetryInboundInterceptor | undefined;
  let outboundTracing: OpenTelemetryOutboundInterceptor | undefined;
  const outbound = (): OpenTelemetryOutboundInterceptor => (outboundTracing ??= new OpenTelemetryOutboundInterceptor());

  const inbound: WorkflowInboundCallsInterceptor = {
    execute: (input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>) => {
      if (input.headers[TRACE_HEADER] === undefined) return next(input);
      traced = true;
      inboundTracing ??= new OpenTelemetryInboundInterceptor();
      return inboundTracing.execute(input, next);
    },
  };
  const outboundInterceptor: WorkflowOutboundCallsInterceptor = {
    scheduleActivity: (input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) =>
      traced ? outbound().scheduleActivity(input, next) : next(input),
    scheduleLocalActivity: (
      input: LocalActivityInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>,
    ) => (traced ? outbound().scheduleLocalActivity(input, next) : next(input)),
    startChildWorkflowExecution: (
      input: StartChildWorkflowExecutionInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>,
    ) => (traced ? outbound().startChildWorkflowExecution(input, next) : next(input)),
    continueAsNew: (input: ContinueAsNewInput, next: Next<WorkflowOutboundCallsInterceptor, 'continueAsNew'>) =>
      traced ? outbound().continueAsNew(input, next) : next(input),
    signalWorkflow: (input: SignalWorkflowInput, next: Next<WorkflowOutboundCallsInterceptor, 'signalWorkflow'>) =>
      traced ? outbound().signalWorkflow(input, next) : next(input),
    getLogAttributes: (
      input: GetLogAttributesInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'getLogAttributes'>,
    ) => (traced ? outbound().getLogAttributes(input, next) : next(input)),
  };
  return {
    inbound: [inbound],
    outbound: [outboundInterceptor],
    // Disables the sandbox's context manager at the end, if tracing made one.
    internals: [new OpenTelemetryInternalsInterceptor()],
  };
};
