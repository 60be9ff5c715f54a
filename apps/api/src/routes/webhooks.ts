import {
  type AuditAction,
  EventAcceptedResponse,
  InvalidInputError,
  NoContent,
  Problem,
} from '@activity-core/contracts';
import {
  WebhookSourceBody,
  WebhookSourceList,
  WebhookSourceName,
  WebhookSourcePutBody,
  WebhookSourceRecord,
} from '@activity-core/webhooks';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { RateLimitedError } from '../plugins/rate-limit';
import type { WebhookService } from '../services/webhook-service';
import { eventOutcomeStatus } from './event-answers';

const NameParams = z.object({ name: WebhookSourceName });
const SourceParams = z.object({ source: WebhookSourceName });

const errors = { 400: Problem, 401: Problem, 404: Problem, 409: Problem, 429: Problem };

/** Management of webhook sources: management API keys only. */
export const webhookSourceRoutes =
  (service: WebhookService): FastifyPluginAsyncZod =>
  async (app) => {
    const config = { auth: 'management', role: 'read' } as const;
    // Webhook sources are shared by every team: a key that owns only some activities may not change them.
    const write = (action: AuditAction) =>
      ({
        auth: 'management',
        role: 'write',
        owns: 'installation',
        audit: { action, target: 'webhook_source' },
      }) as const;
    const tags = ['webhooks'];

    app.post(
      '/v1/webhook-sources',
      {
        config: write('webhook_source.create'),
        schema: {
          tags,
          summary: 'Configure a webhook source',
          description: 'Deliveries are then accepted at `POST /v1/webhooks/{name}`. The secret is write-only.',
          body: WebhookSourceBody,
          response: { 201: WebhookSourceRecord, ...errors },
        },
      },
      async (request, reply) => reply.status(201).send(await service.create(request.body)),
    );

    app.put(
      '/v1/webhook-sources/:name',
      {
        config: {
          ...write('webhook_source.update'),
          audit: {
            action: (status: number) => (status === 201 ? 'webhook_source.create' : 'webhook_source.update'),
            target: 'webhook_source',
          },
        },
        schema: {
          tags,
          summary: 'Create or replace a webhook source (this is how a secret is rotated)',
          params: NameParams,
          body: WebhookSourcePutBody,
          response: { 200: WebhookSourceRecord, 201: WebhookSourceRecord, ...errors },
        },
      },
      async (request, reply) => {
        const { name } = request.params;
        if (request.body.name !== undefined && request.body.name !== name) {
          throw new InvalidInputError(`the body names source ${request.body.name} but the path names ${name}`, [
            { path: 'name', message: 'must equal the name in the path' },
          ]);
        }
        const { kind, view } = await service.put({ ...request.body, name });
        return reply.status(kind === 'created' ? 201 : 200).send(view);
      },
    );

    app.get(
      '/v1/webhook-sources',
      {
        config,
        schema: {
          tags,
          summary: 'List webhook sources',
          response: { 200: WebhookSourceList, ...errors },
        },
      },
      async () => ({ items: await service.list() }),
    );

    app.get(
      '/v1/webhook-sources/:name',
      {
        config,
        schema: {
          tags,
          summary: 'Get a webhook source (without its secret)',
          params: NameParams,
          response: { 200: WebhookSourceRecord, ...errors },
        },
      },
      async (request) => await service.get(request.params.name),
    );

    app.delete(
      '/v1/webhook-sources/:name',
      {
        config: write('webhook_source.delete'),
        schema: {
          tags,
          summary: 'Remove a webhook source; its deliveries are refused from then on',
          params: NameParams,
          response: { 204: NoContent, ...errors },
        },
      },
      async (request, reply) => {
        await service.remove(request.params.name);
        return reply.status(204).send(null);
      },
    );
  };

/**
 * `POST /v1/webhooks/{source}`: authenticated by the source's signature, not
 * by an API key. Its own encapsulated context takes every body as raw bytes,
 * because a signature covers the exact bytes sent — re-serialised JSON would
 * not verify.
 */
export const webhookIngestRoutes =
  (service: WebhookService): FastifyPluginAsyncZod =>
  async (app) => {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

    app.post(
      '/v1/webhooks/:source',
      {
        config: { auth: 'webhook' },
        schema: {
          tags: ['webhooks'],
          summary: 'Receive a webhook delivery from a configured source',
          description:
            "The raw body is verified against the source's signature scheme (Standard Webhooks, GitHub, or HMAC-SHA256) before anything is stored; " +
            'a bad or missing signature, and an unknown source, get the same 401. The event id is `wh:{source}:{delivery id}`, so redeliveries answer `duplicate`; ' +
            'so does the same signed content re-sent under another delivery id (pointing at the first event). ' +
            "Verified deliveries count against the source's rate limit; failed ones against the client address (429 with Retry-After).",
          params: SourceParams,
          response: {
            202: EventAcceptedResponse,
            400: Problem,
            401: Problem,
            413: Problem,
            422: Problem,
            429: Problem,
            503: Problem,
          },
        },
      },
      async (request, reply) => {
        const receivedAt = new Date();
        const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        try {
          const outcome = await service.receive(request.params.source, request.headers, raw, receivedAt, request.ip);
          return reply.status(eventOutcomeStatus(outcome)).send(outcome.answer);
        } catch (error) {
          if (error instanceof RateLimitedError) reply.header('retry-after', String(error.retryAfterSeconds));
          throw error;
        }
      },
    );
  };
