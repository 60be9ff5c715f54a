import {
  assertNever,
  DomainError,
  type DomainErrorCode,
  EventIdReusedError,
  type ForbiddenError,
  type InvalidInputError,
  type PayloadTooLargeError,
  UnavailableError,
} from '@activity-core/contracts';
import { DefinitionNameTakenError, isConnectionError, isInvalidTextError } from '@activity-core/db';
import { WebhookPayloadError, WebhookVerificationError } from '@activity-core/webhooks';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { formatPath, problem, type ProblemBody } from './problem';

function send(reply: FastifyReply, request: FastifyRequest, body: ProblemBody): FastifyReply {
  return reply
    .status(body.status)
    .type('application/problem+json')
    .send({ ...body, instance: request.url, request_id: request.id });
}

function fromDomainError(error: DomainError): ProblemBody {
  const code: DomainErrorCode = error.code;
  switch (code) {
    case 'not_found':
      return problem('not_found', 404, 'Not found', error.message);
    case 'conflict':
      return problem('conflict', 409, 'Conflict', error.message);
    case 'invalid_input':
      return problem('validation', 400, 'Invalid request', error.message, (error as InvalidInputError).issues);
    case 'event_id_reused':
      return problem('event_id_reused', 422, 'Event id reused with a different payload', error.message);
    case 'unauthorized':
      return problem('unauthorized', 401, 'Unauthorized', error.message);
    case 'forbidden':
      return problem('forbidden', 403, 'Forbidden', error.message, (error as ForbiddenError).issues);
    case 'payload_too_large':
      return problem('payload_too_large', 413, 'Payload too large', error.message, (error as PayloadTooLargeError).issues);
    case 'unavailable': {
      // After the write began the event may be stored: the answer names its id (an assigned one too) for the retry.
      const eventId = (error as { eventId?: unknown }).eventId;
      return { ...problem('unavailable', 503, 'Service unavailable', error.message), ...(typeof eventId === 'string' ? { event_id: eventId } : {}) };
    }
    default:
      return assertNever(code);
  }
}

/**
 * The one place errors become HTTP answers. Input problems are 4xx with a
 * message that says what is wrong; internals are never leaked (500s carry
 * only the request id, the log has the rest).
 */
export function registerErrorHandler(app: FastifyInstance): void {
  app.setNotFoundHandler((request, reply) =>
    send(reply, request, problem('not_found', 404, 'Not found', `no route ${request.method} ${request.url.split('?')[0]}`)),
  );

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (hasZodFastifySchemaValidationErrors(error)) {
      const where = error.validationContext ?? 'body';
      const errors = error.validation.map((issue) => {
        const path = formatPath(issue.instancePath);
        return { path: path === '' ? where : `${where === 'body' ? '' : `${where}.`}${path}`, message: issue.message ?? 'invalid', code: issue.keyword };
      });
      const detail = errors.map((e) => `${e.path}: ${e.message}`).join('; ');
      return send(reply, request, problem('validation', 400, 'Invalid request', detail, errors));
    }
    if (error instanceof DomainError) {
      const body = fromDomainError(error);
      if (error instanceof UnavailableError) reply.header('retry-after', String(error.retryAfterSeconds));
      if (error instanceof EventIdReusedError) request.log.info({ eventId: error.eventId }, 'event id reused with different content');
      if (error.code === 'unauthorized') reply.header('www-authenticate', 'Bearer realm="activity-core"');
      return send(reply, request, body);
    }
    if (error instanceof WebhookVerificationError) {
      // Nothing was stored; the message names headers and rules, never the secret.
      request.log.info({ code: error.code, source: (request.params as { source?: string }).source }, 'webhook delivery refused');
      const path = error.header === undefined ? 'headers' : `header.${error.header.toLowerCase()}`;
      return send(reply, request, problem('invalid_signature', 401, 'Webhook signature not verified', error.message, [{ path, message: error.message, code: error.code }]));
    }
    if (error instanceof WebhookPayloadError) {
      return send(reply, request, problem('invalid_webhook_payload', 400, 'Webhook payload not usable', error.message, [{ path: 'body', message: error.message, code: error.code }]));
    }
    if (error instanceof DefinitionNameTakenError) {
      return send(reply, request, problem('conflict', 409, 'Name already in use', error.message, [{ path: 'name', message: error.message }]));
    }
    if (isInvalidTextError(error)) {
      return send(reply, request, problem('validation', 400, 'Invalid request', 'the request contains text that cannot be stored (e.g. a NUL character \\u0000)'));
    }
    if (isConnectionError(error)) {
      request.log.error({ err: error }, 'dependency unreachable');
      reply.header('retry-after', '5');
      return send(reply, request, problem('unavailable', 503, 'Service unavailable', 'a dependency is unreachable; retry later'));
    }
    switch (error.code) {
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        return send(reply, request, problem('invalid_json', 400, 'Invalid JSON', error.message));
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return send(reply, request, problem('payload_too_large', 413, 'Payload too large', error.message));
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return send(reply, request, problem('unsupported_media_type', 415, 'Unsupported media type', error.message));
      default:
        break;
    }
    if (error instanceof SyntaxError || (error as { type?: string }).type === 'entity.parse.failed') {
      return send(reply, request, problem('invalid_json', 400, 'Invalid JSON', error.message));
    }
    const status = error.statusCode ?? 500;
    if (status === 429) return send(reply, request, problem('rate_limited', 429, 'Too many requests', error.message));
    if (status >= 400 && status < 500) return send(reply, request, problem('bad_request', status, 'Bad request', error.message));
    request.log.error({ err: error }, 'unhandled error');
    return send(reply, request, problem('internal', 500, 'Internal error', `something went wrong; quote request id ${request.id}`));
  });
}
