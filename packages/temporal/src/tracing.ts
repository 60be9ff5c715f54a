/**
 * OpenTelemetry traces, when an operator asks for them (OTEL_* settings).
 *
 * One trace per trigger: the API's request span, the ingest, the workflow
 * start, the run workflow, its activities and its task child workflows. The
 * Temporal side is `@temporalio/interceptors-opentelemetry`: client
 * interceptors put the active span into the workflow's headers, the
 * workflow interceptors (tracing-interceptors.ts, in the bundle) continue it
 * inside the sandbox and hand finished spans to the worker through a sink,
 * and the activity interceptor continues it around each activity (the sink
 * and the activity interceptor are in worker-tracing.ts).
 *
 * Off (no `Tracing`), nothing is registered: every span call in the code is
 * an OpenTelemetry API no-op and no workflow carries a trace header.
 */
import { context, propagation, trace, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import {
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client/index.js';

/** The name every span of ours is created under. */
export const TRACER_NAME = 'activity-core';

/** The tracer for our own spans (request, ingest); a no-op unless tracing was started. */
export function tracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

/** Tracing as the OTEL_* settings describe it (see @activity-core/config). */
export interface TracingSettings {
  /** Full OTLP/HTTP traces URL, e.g. http://collector:4318/v1/traces. */
  endpoint: string;
  /** Extra headers for the collector (OTEL_EXPORTER_OTLP_HEADERS), e.g. an API key. */
  headers: Readonly<Record<string, string>>;
  /** OTEL_SERVICE_NAME; each process's own name when null. */
  serviceName: string | null;
}

export interface Tracing {
  readonly resource: Resource;
  /** Where finished spans go (the workflow sink feeds the same processor). */
  readonly spanProcessor: SpanProcessor;
  /** Interceptors for a `Client` that starts workflows: the start span, and its context in the headers. */
  clientInterceptors(): { workflow: WorkflowClientInterceptor[] };
  /** Exports what is still buffered and unregisters the global provider. */
  shutdown(): Promise<void>;
}

let active: Tracing | undefined;

/**
 * Registers a tracer provider, W3C propagation and an AsyncLocalStorage
 * context manager for the whole process. One per process: API and worker in
 * one process (tests) share it.
 */
export function startTracing(options: { serviceName: string; spanProcessor: SpanProcessor }): Tracing {
  if (active !== undefined) throw new Error('tracing is already started in this process');
  const resource = new Resource({ 'service.name': options.serviceName });
  const provider = new BasicTracerProvider({
    resource,
    sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }),
  });
  provider.addSpanProcessor(options.spanProcessor);
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(
    new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
  );
  trace.setGlobalTracerProvider(provider);
  const tracing: Tracing = {
    resource,
    spanProcessor: options.spanProcessor,
    clientInterceptors: () => ({ workflow: [new OpenTelemetryWorkflowClientInterceptor()] }),
    shutdown: async () => {
      if (active !== tracing) return;
      active = undefined;
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
  active = tracing;
  return tracing;
}

/** Starts tracing with an OTLP/HTTP exporter, batching spans; for the processes' entry points. */
export function startOtlpTracing(settings: TracingSettings, defaultServiceName: string): Tracing {
  const exporter = new OTLPTraceExporter({ url: settings.endpoint, headers: { ...settings.headers } });
  return startTracing({
    serviceName: settings.serviceName ?? defaultServiceName,
    spanProcessor: new BatchSpanProcessor(exporter),
  });
}
