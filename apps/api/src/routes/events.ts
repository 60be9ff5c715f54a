import {
  CloudEvent,
  EventsBody,
  EventsResponse,
  IdempotencyKeyHeader,
  InvalidInputError,
  MAX_EVENT_BATCH,
  parseIdempotencyKey,
  Problem,
  StoredEvent,
} from '@activity-core/contracts';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { BatchItemOutcome, EventOutcome, EventService } from '../services/event-service';
import { batchItemAnswer, EVENT_ACCEPTED_STATUS, eventOutcomeStatus } from './event-answers';
import {
  BATCH_MEDIA_TYPE,
  binaryFieldPath,
  cloudEventFromBinary,
  contentModeOf,
  MAX_CE_HEADERS,
  STRUCTURED_MEDIA_TYPE,
  unsupportedEventMediaType,
} from './cloudevents-http';

const MAX_BATCH = MAX_EVENT_BATCH;

/** `application/…+json` (parameters allowed), as fastify renders a parsed Content-Type: lowercase, `; ` before parameters. */
const JSON_SUFFIX_MEDIA_TYPE = /^application\/[a-z0-9!#$&^_.-]+\+json(?:;|$)/;

/**
 * The headers as documented: binary-mode attributes too (validated per event
 * by the service, naming the header). Their rules hold only in binary mode (a
 * rule across headers, which a schema cannot state), so they are stated in
 * words; outside binary mode `ce-*` headers are not read.
 */
const DocumentedHeaders = IdempotencyKeyHeader.extend({
  'ce-specversion': z.literal('1.0').optional().meta({
    description:
      "CloudEvents binary mode: its presence makes the headers the event's attributes and the JSON body its `data`.",
  }),
  'ce-id': z.string().optional().meta({
    description:
      'Binary mode: the event id (required, not empty; decoded, it follows the CloudEvent `id` rules). Header values are percent-encoded UTF-8. Not read outside binary mode.',
  }),
  'ce-source': z.string().optional().meta({ description: 'Binary mode: the source (required, not empty).' }),
  'ce-type': z.string().optional().meta({ description: 'Binary mode: the event type (required, not empty).' }),
  'ce-time': z
    .string()
    .optional()
    .meta({ description: 'Binary mode: RFC 3339 time of the occurrence; the receive time when absent.' }),
  'ce-subject': z.string().optional().meta({ description: 'Binary mode: the subject (not empty when sent).' }),
  'ce-dataschema': z
    .string()
    .optional()
    .meta({
      description: `Binary mode: checked, not kept; as are other ce-* extension attributes (at most ${MAX_CE_HEADERS} ce-* headers).`,
    }),
});
/**
 * Items are CloudEvents, checked one by one like a JSON batch's: an invalid
 * item is refused in its result (202), not the batch. So the schema takes any
 * item; the CloudEvent schema is what an item must be to be accepted.
 */
const CloudEventBatch = z
  .array(
    z.unknown().meta({
      description:
        'A CloudEvent (components.schemas.CloudEventInput); an item that is not one is refused in its own result.',
    }),
  )
  .max(MAX_BATCH, `a batch holds at most ${MAX_BATCH} events`);

const credentialOf = (request: FastifyRequest) =>
  request.credential === undefined ? {} : { credential: request.credential };

export const eventRoutes =
  (service: EventService): FastifyPluginAsyncZod =>
  async (app) => {
    const tags = ['events'];
    // Besides application/json (the server's parser): the CloudEvents media types and binary mode's `+json` data types,
    // read by the same JSON parser under the same body limit. Everything else is a 415 that lists what is read.
    const parseJson = app.getDefaultJsonParser('error', 'error');
    app.addContentTypeParser(JSON_SUFFIX_MEDIA_TYPE, { parseAs: 'string' }, (request, body, done) => {
      try {
        // A +json type outside the CloudEvents modes is a 415, not a JSON error.
        contentModeOf(request.headers['content-type'], request.headers['ce-specversion'] !== undefined);
      } catch (error) {
        done(error as Error, undefined);
        return;
      }
      void parseJson(request, body as string, done);
    });
    app.addContentTypeParser('*', (request, _payload, done) => {
      done(
        unsupportedEventMediaType(request.headers['content-type'], request.headers['ce-specversion'] !== undefined),
        undefined,
      );
    });

    app.post(
      '/v1/events',
      {
        config: { auth: 'ingest', role: 'operate' },
        // The body schemas document the endpoint; validation happens per item in
        // the service, so a bad single event gets field-level errors and a bad
        // batch item does not reject its neighbours.
        validatorCompiler:
          ({ httpPart }) =>
          (data) =>
            httpPart === 'headers'
              ? IdempotencyKeyHeader.safeParse(data).success
                ? { value: data }
                : { error: new Error('invalid Idempotency-Key header (1 to 200 characters)') }
              : { value: data },
        schema: {
          tags,
          summary: 'Send one event (envelope or CloudEvent) or a batch',
          description:
            'The event is stored before the answer; every matching activity gets exactly one run `activity-{activity_id}:{event_id}`. ' +
            'Redeliveries answer `duplicate`; the same id with different content answers 422. ' +
            "Reserved sources (`webhook:*`, `activity-core`, `activity-core:*`, a webhook source's custom event_source) answer 400; a scoped ingest key outside its scope answers 403. " +
            'A batch is answered per item (202) once anything may be stored; with an Idempotency-Key, items without an event_id get `{key}#{index}`. ' +
            `CloudEvents 1.0 in every content mode: structured (\`${STRUCTURED_MEDIA_TYPE}\`), batched (\`${BATCH_MEDIA_TYPE}\`, 0 to ${MAX_BATCH} events) ` +
            "and binary (`ce-specversion: 1.0` and the other `ce-*` headers, percent-encoded; the body is the event's `data`, as `application/json` or any `+json` type). " +
            'Event data is a JSON object in every mode; other content types answer 415 with `Accept-Post`.',
          headers: DocumentedHeaders,
          body: {
            content: {
              'application/json': { schema: EventsBody },
              [STRUCTURED_MEDIA_TYPE]: { schema: CloudEvent },
              [BATCH_MEDIA_TYPE]: { schema: CloudEventBatch },
            },
          },
          response: {
            202: EventsResponse,
            400: Problem,
            401: Problem,
            403: Problem,
            413: Problem,
            415: Problem,
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
        const options = {
          ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
          receivedAt,
          ...credentialOf(request),
        };
        const answerEvent = (outcome: EventOutcome) => reply.status(eventOutcomeStatus(outcome)).send(outcome.answer);
        const answerBatch = (outcomes: BatchItemOutcome[]) =>
          reply.status(EVENT_ACCEPTED_STATUS).send({ results: outcomes.map(batchItemAnswer) });
        switch (contentModeOf(request.headers['content-type'], request.headers['ce-specversion'] !== undefined)) {
          case 'binary': {
            const event = cloudEventFromBinary(request.raw, body);
            return answerEvent(await service.accept(event, { ...options, cloudEvent: { fieldPath: binaryFieldPath } }));
          }
          case 'structured':
            if (typeof body !== 'object' || body === null || Array.isArray(body)) {
              throw new InvalidInputError(
                `${STRUCTURED_MEDIA_TYPE} carries one CloudEvent object; send a batch as ${BATCH_MEDIA_TYPE}`,
                [{ path: 'body', message: `expected one CloudEvent object; a batch is ${BATCH_MEDIA_TYPE}` }],
              );
            }
            return answerEvent(await service.accept(body, { ...options, cloudEvent: {} }));
          case 'batched':
            if (!Array.isArray(body) || body.length > MAX_BATCH) {
              const got = Array.isArray(body) ? `${body.length} events` : 'no array';
              throw new InvalidInputError(
                `${BATCH_MEDIA_TYPE} carries an array of 0 to ${MAX_BATCH} CloudEvents, got ${got}`,
                [{ path: 'body', message: `expected an array of at most ${MAX_BATCH} CloudEvents` }],
              );
            }
            // The CloudEvents batch format allows an empty batch: nothing to accept, nothing to refuse.
            if (body.length === 0) return reply.status(EVENT_ACCEPTED_STATUS).send({ results: [] });
            return answerBatch(await service.acceptBatch(body, { ...options, cloudEvent: {} }));
          case 'json':
            break;
        }
        if (typeof body !== 'object' || body === null) {
          throw new InvalidInputError('the body must be an event object or an array of events', [
            { path: 'body', message: 'expected an object or an array' },
          ]);
        }
        if (Array.isArray(body)) {
          if (body.length === 0 || body.length > MAX_BATCH) {
            throw new InvalidInputError(`a batch holds 1 to ${MAX_BATCH} events, got ${body.length}`, [
              { path: 'body', message: `expected 1 to ${MAX_BATCH} items` },
            ]);
          }
          // Per-item answers from here on: once an item may be stored, the request as a whole never fails.
          return answerBatch(await service.acceptBatch(body, options));
        }
        return answerEvent(await service.accept(body, options));
      },
    );

    app.get(
      '/v1/events/:event_id',
      {
        config: { auth: 'management', role: 'read' },
        schema: {
          tags,
          summary:
            'An accepted event, its routing decisions, the runs it cancelled (cancel_on) and the waits it resumed',
          params: z.object({ event_id: z.string().min(1) }),
          response: { 200: StoredEvent, 401: Problem, 404: Problem, 429: Problem },
        },
      },
      async (request) => await service.get(request.params.event_id),
    );
  };
