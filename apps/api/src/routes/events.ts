import { CloudEvent, EventAcceptedResponse, EventEnvelope, EventEnvelopeInput, EventIdOrigin, InvalidInputError, parseIdempotencyKey, Problem, RouteOutcome } from '@activity-core/contracts';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { EventService } from '../services/event-service';

/** Largest batch `POST /v1/events` takes. */
export const MAX_BATCH = 100;

const EventsBody = z.union([
  EventEnvelopeInput,
  CloudEvent,
  z.array(z.unknown()).min(1, 'a batch needs at least one event').max(MAX_BATCH, `a batch holds at most ${MAX_BATCH} events`),
]);
const Headers = z.object({ 'idempotency-key': z.string().min(1).max(200).optional() });

const BatchItem = z.union([
  EventAcceptedResponse.extend({ index: z.number().int(), ok: z.literal(true) }),
  z.object({
    index: z.number().int(),
    ok: z.literal(false),
    status: z.number().int(),
    title: z.string(),
    detail: z.string(),
    errors: z.array(z.object({ path: z.string(), message: z.string(), code: z.string().optional() })).optional(),
    event_id: z.string().optional().meta({ description: 'The id the item has (given, derived from Idempotency-Key, or assigned): resend the item with it so a retry cannot double it.' }),
  }),
]);

const StoredEvent = z.object({
  event_id: z.string(),
  envelope: EventEnvelope,
  id_origin: EventIdOrigin,
  credential: z.string().nullable().meta({
    description:
      'Which credential delivered the event: `api_key:<key id>`, `ingest_key:<key id>` (12 hex digits of the key\'s SHA-256, never the key), `webhook:<source name>`, `emit:<run id>`, or `anonymous` while authentication is off; null for events stored before credentials were recorded.',
  }),
  hops: z.number().int().meta({ description: 'emit_event steps between this event and an external one; 0 for posted, webhook and cron-born events.' }),
  fingerprint: z.string(),
  received_at: z.string(),
  routing_state: z.enum(['pending', 'routed']),
  routing_attempts: z.number().int(),
  routed_at: z.string().nullable(),
  last_error: z.string().nullable(),
  routes: z.array(
    z.object({
      activity_id: z.string(),
      activity_name: z.string(),
      activity_version: z.number().int(),
      workflow_id: z.string(),
      run_id: z.string().meta({ description: 'For filtered routes: the run the event would have started.' }),
      outcome: RouteOutcome,
      /** Why a filter stopped the event; null for routes that run. */
      detail: z.string().nullable(),
      decided_at: z.string(),
      updated_at: z.string(),
    }),
  ),
}).meta({ id: 'StoredEvent', description: 'An accepted event and the decision log of its routing: every activity whose trigger matched its type and source, and what happened.' });

const credentialOf = (request: FastifyRequest) => (request.credential === undefined ? {} : { credential: request.credential });

export const eventRoutes = (service: EventService): FastifyPluginAsyncZod =>
  async (app) => {
    const tags = ['events'];

    app.post(
      '/v1/events',
      {
        config: { auth: 'ingest' },
        // The body schema documents the endpoint; validation happens per item in
        // the service, so a bad single event gets field-level errors and a bad
        // batch item does not reject its neighbours.
        validatorCompiler: ({ httpPart }) => (data) => (httpPart === 'headers' ? Headers.safeParse(data).success ? { value: data } : { error: new Error('invalid Idempotency-Key header (1 to 200 characters)') } : { value: data }),
        schema: {
          tags,
          summary: 'Send one event (envelope or CloudEvent) or a batch',
          description:
            'The event is stored before the answer; every matching activity gets exactly one run `activity-{activity_id}:{event_id}`. ' +
            'Redeliveries answer `duplicate`; the same id with different content answers 422. ' +
            'Reserved sources (`webhook:*`, `activity-core`, `activity-core:*`, a webhook source\'s custom event_source) answer 400; a scoped ingest key outside its scope answers 403. ' +
            'A batch is answered per item (202) once anything may be stored; with an Idempotency-Key, items without an event_id get `{key}#{index}`.',
          headers: Headers,
          body: EventsBody,
          response: {
            202: z.union([EventAcceptedResponse, z.object({ results: z.array(BatchItem) })]),
            400: Problem,
            401: Problem,
            403: Problem,
            413: Problem,
            422: Problem,
            429: Problem,
            503: Problem,
          },
        },
      },
      async (request, reply) => {
        const receivedAt = new Date();
        const header = request.headers['idempotency-key'];
        const idempotencyKey = header === undefined ? undefined : parseIdempotencyKey(header);
        const body: unknown = request.body;
        if (typeof body !== 'object' || body === null) {
          throw new InvalidInputError('the body must be an event object or an array of events', [{ path: 'body', message: 'expected an object or an array' }]);
        }
        if (Array.isArray(body)) {
          if (body.length === 0 || body.length > MAX_BATCH) {
            throw new InvalidInputError(`a batch holds 1 to ${MAX_BATCH} events, got ${body.length}`, [{ path: 'body', message: `expected 1 to ${MAX_BATCH} items` }]);
          }
          // Per-item answers from here on: once an item may be stored, the request as a whole never fails.
          const results = await service.acceptBatch(body, { ...(idempotencyKey === undefined ? {} : { idempotencyKey }), receivedAt, ...credentialOf(request) });
          return reply.status(202).send({ results });
        }
        const result = await service.accept(body, { ...(idempotencyKey === undefined ? {} : { idempotencyKey }), receivedAt, ...credentialOf(request) });
        return reply.status(202).send(result);
      },
    );

    app.get(
      '/v1/events/:event_id',
      {
        config: { auth: 'management' },
        schema: {
          tags,
          summary: 'An accepted event and its routing decisions',
          params: z.object({ event_id: z.string().min(1) }),
          response: { 200: StoredEvent, 401: Problem, 404: Problem, 429: Problem },
        },
      },
      async (request) => await service.get(request.params.event_id),
    );
  };
