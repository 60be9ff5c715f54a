/**
 * The worker's half of tracing (see tracing.ts): spans around activities, and
 * the sink the workflow interceptors inside the sandbox export finished spans
 * through. Kept apart from tracing.ts so that a process which only starts
 * workflows (the API) never loads worker-side code.
 */
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/worker/index.js';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import type { Tracing } from './tracing';

/** Traces each activity as a child of the span that scheduled it. */
export function effectTracingInterceptors(): ActivityInterceptorsFactory {
  return (ctx) => ({
    inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
    outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
  });
}

const dropSpans = { export: { fn: () => undefined } };

/**
 * The `exporter` sink the workflow interceptors hand finished spans to. Always
 * registered, because the bundle always has the interceptors: without tracing
 * here, spans of a workflow started by a tracing client are dropped.
 */
export function workflowTracingSinks(tracing: Tracing | undefined): InjectedSinks<Record<string, never>> {
  return {
    exporter: tracing === undefined ? dropSpans : makeWorkflowExporter(tracing.spanProcessor, tracing.resource),
  } as unknown as InjectedSinks<Record<string, never>>;
}
