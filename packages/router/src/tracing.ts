import { SpanStatusCode, trace, type Attributes } from '@opentelemetry/api';

/** Same name as TRACER_NAME in @activity-core/temporal/client: one instrumentation scope for our own spans. */
const tracer = trace.getTracer('activity-core');

/**
 * Runs `fn` in a span that is the active one for everything it starts (the
 * workflow start's span is its child). An OpenTelemetry no-op unless tracing
 * was started in this process.
 */
export async function inSpan<T>(name: string, attributes: Attributes, fn: () => Promise<T>): Promise<T> {
  return await tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn();
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
      throw error;
    } finally {
      span.end();
    }
  });
}
