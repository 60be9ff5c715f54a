import { DomainError, EventIdReusedError, UnavailableError, UnsupportedMediaTypeError } from '@activity-core/contracts';
import { DatabaseUnreachableError, DefinitionNameTakenError, translatePgError } from '@activity-core/db';
import { WebhookPayloadError, WebhookVerificationError } from '@activity-core/webhooks';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { problemOf } from './domain-errors';
import { formatPath, problem, type ProblemBody } from './problem';

function send(reply: FastifyReply, request: FastifyRequest, body: ProblemBody): FastifyReply {
  return reply
    .status(body.status)
    .type('application/problem+json')
    .send({ ...body, instance: request.url, request_id: request.id });
}

/**
 * The one place errors become HTTP answers. Input problems are 4xx with a
 * message that says what is wrong; internals are never leaked (500s carry
 * only the request id, the log has the rest).
 */
export function registerErrorHandler(app: FastifyInstance): void {
  app.setNotFoundHandler((request, reply) =>
    send(
      reply,
      request,
      problem('not_found', 404, 'Not found', `no route ${request.method} ${request.url.split('?')[0]}`),
    ),
  );

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (hasZodFastifySchemaValidationErrors(error)) {
      const where = error.validationContext ?? 'body';
      const errors = error.validation.map((issue) => {
        const path = formatPath(issue.instancePath);
        return {
          path: path === '' ? where : `${where === 'body' ? '' : `${where}.`}${path}`,
          message: issue.message ?? 'invalid',
          code: issue.keyword,
        };
      });
      const detail = errors.map((e) => `${e.path}: ${e.message}`).join('; ');
      return send(reply, request, problem('invalid_input', 400, 'Invalid request', detail, errors));
    }
    // A Postgres fault no service translated (a repository call that failed) becomes its domain error here.
    const domain = translatePgError(error);
    if (domain instanceof DomainError) {
      if (domain instanceof DatabaseUnreachableError && domain !== error)
        request.log.error({ err: error }, 'dependency unreachable');
      if (domain instanceof UnavailableError) reply.header('retry-after', String(domain.retryAfterSeconds));
      if (domain instanceof EventIdReusedError)
        request.log.info({ eventId: domain.eventId }, 'event id reused with different content');
      if (domain.code === 'unauthorized') reply.header('www-authenticate', 'Bearer realm="activity-core"');
      // The media types the endpoint does read, in the registered Accept-Post header (a 415 should say what would work).
      if (domain instanceof UnsupportedMediaTypeError) reply.header('accept-post', domain.accepted.join(', '));
      return send(reply, request, problemOf(domain));
    }
    if (error instanceof WebhookVerificationError) {
      // Nothing was stored; the message names headers and rules, never the secret.
      request.log.info(
        { code: error.code, source: (request.params as { source?: string }).source },
        'webhook delivery refused',
      );
      const path = error.header === undefined ? 'headers' : `header.${error.header.toLowerCase()}`;
      return send(
        reply,
        request,
        problem('invalid_signature', 401, 'Webhook signature not verified', error.message, [
          { path, message: error.message, code: error.code },
        ]),
      );
    }
    if (error instanceof WebhookPayloadError) {
      return send(
        reply,
        request,
        problem('invalid_webhook_payload', 400, 'Webhook payload not usable', error.message, [
          { path: 'body', message: error.message, code: error.code },
        ]),
      );
    }
    if (error instanceof DefinitionNameTakenError) {
      return send(
        reply,
        request,
        problem('conflict', 409, 'Name already in use', error.message, [{ path: 'name', message: error.message }]),
      );
    }
    switch (error.code) {
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        return send(reply, request, problem('invalid_json', 400, 'Invalid JSON', error.message));
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return send(reply, request, problem('payload_too_large', 413, 'Payload too large', error.message));
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': {
        // Every route but POST /v1/events (its own list) and webhook deliveries (any type) reads JSON alone.
        if (request.method === 'POST') reply.header('accept-post', 'application/json');
        const sent = request.headers['content-type'] ?? '(none)';
        const detail = `Content-Type ${sent.slice(0, 100)} is not accepted; send application/json`;
        return send(
          reply,
          request,
          problem('unsupported_media_type', 415, 'Unsupported media type', detail, [
            { path: 'header.content-type', message: 'accepted: application/json' },
          ]),
        );
      }
      default:
        break;
    }
    if (error instanceof SyntaxError || (error as { type?: string }).type === 'entity.parse.failed') {
      return send(reply, request, problem('invalid_json', 400, 'Invalid JSON', error.message));
    }
    const status = error.statusCode ?? 500;
    if (status === 429) return send(reply, request, problem('rate_limited', 429, 'Too many requests', error.message));
    if (status >= 400 && status < 500)
      return send(reply, request, problem('bad_request', status, 'Bad request', error.message));
    request.log.error({ err: error }, 'unhandled error');
    return send(
      reply,
      request,
      problem('internal', 500, 'Internal error', `something went wrong; quote request id ${request.id}`),
    );
  });
}
