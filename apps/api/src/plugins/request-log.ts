import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

/**
 * One log line per request, at info, when it is answered: method, route
 * template, path, status, duration and the request id (`reqId`, from the
 * request's child logger; X-Request-Id when the client sent one). Replaces
 * Fastify's pair ("incoming request" + "request completed") and its separate
 * "Route ... not found" line. An error while sending the answer is logged at
 * error with its detail; errors the handlers raise are logged by the error
 * handler (plugins/error-handler.ts), with theirs.
 */
export class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}

  override routeNotFound(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    if (error) reply.log.error({ ...requestLogFields(request, reply), err: error }, 'request failed while answering');
    else reply.log.info(requestLogFields(request, reply), 'request');
  }
}

function requestLogFields(request: FastifyRequest, reply: FastifyReply): Record<string, unknown> {
  return {
    method: request.method,
    route: request.routeOptions.url ?? 'unmatched',
    url: request.url,
    status: reply.statusCode,
    durationMs: Math.round(reply.elapsedTime * 10) / 10,
  };
}
