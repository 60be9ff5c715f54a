import { context, propagation, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { tracer } from '@activity-core/temporal/client';
import type { FastifyInstance, FastifyRequest } from 'fastify';

const spans = new WeakMap<FastifyRequest, Span>();

/**
 * A server span per request, the root of the trace of whatever the request
 * starts (the ingest, the workflow start, the run). A `traceparent` header
 * from the caller makes it a child of the caller's span. Registered only when
 * tracing is on.
 */
export function registerTracing(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    const parent = propagation.extract(context.active(), request.headers);
    const span = tracer().startSpan(
      // Renamed to the route template at the end (bounded names).
      request.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': request.method,
          'url.path': request.url.split('?')[0] ?? '',
          'activity_core.request_id': request.id,
        },
      },
      parent,
    );
    spans.set(request, span);
    // The request's log lines (its one `request` line, errors) carry the trace id, to jump from a log line to its trace.
    const log = request.log.child({ traceId: span.spanContext().traceId });
    request.log = log;
    reply.log = log;
  });
  // The handler runs inside the span: after body parsing, so the context is not lost on the stream's callbacks.
  app.addHook('preHandler', (request, _reply, done) => {
    const span = spans.get(request);
    if (span === undefined) return done();
    context.with(trace.setSpan(context.active(), span), done);
  });
  app.addHook('onResponse', async (request, reply) => {
    const span = spans.get(request);
    if (span === undefined) return;
    const route = request.routeOptions.url;
    if (route !== undefined) {
      span.updateName(`${request.method} ${route}`);
      span.setAttribute('http.route', route);
    }
    span.setAttribute('http.response.status_code', reply.statusCode);
    if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
    spans.delete(request);
  });
  app.addHook('onRequestAbort', async (request) => {
    const span = spans.get(request);
    if (span === undefined) return;
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'aborted by the client' });
    span.end();
    spans.delete(request);
  });
}
