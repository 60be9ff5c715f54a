import {
  DeadLetterDiscardResponse,
  DeadLetterListQuery,
  DeadLetterPage,
  DeadLetterRetryResponse,
  DeadLetterSelection,
  Problem,
} from '@activity-core/contracts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { DeadLetterService } from '../services/dead-letter-service';
import { credentialLabel } from '../services/event-service';

const errors = { 400: Problem, 401: Problem, 403: Problem, 404: Problem };

/** Dead letters: accepted events' routes whose run could not be started (docs/recovery.md, "Dead letters"). */
export const deadLetterRoutes =
  (service: DeadLetterService): FastifyPluginAsyncZod =>
  async (app) => {
    const tags = ['events'];
    // Retries and discards act on any activity's routes: the installation's, like replays.
    const operate = { auth: 'management', role: 'operate', owns: 'installation' } as const;

    app.get(
      '/v1/dead-letters',
      {
        config: { auth: 'management', role: 'read' },
        schema: {
          tags,
          summary:
            'List dead letters (routes whose run could not be started, and filter errors), oldest first, by activity and reason',
          querystring: DeadLetterListQuery,
          response: { 200: DeadLetterPage, ...errors },
        },
      },
      async (request) => await service.list(request.query),
    );

    app.post(
      '/v1/dead-letters/retry',
      {
        config: { ...operate, audit: { action: 'dead_letters.retry', target: 'installation' } },
        schema: {
          tags,
          summary:
            "Retry dead letters against today's definitions: one (event_id + activity_id) or up to 100 a filter selects; each runs under the event's own run id",
          body: DeadLetterSelection,
          response: { 200: DeadLetterRetryResponse, ...errors },
        },
      },
      async (request) => await service.retry(request.body, credentialLabel(request.credential)),
    );

    app.post(
      '/v1/dead-letters/discard',
      {
        config: { ...operate, audit: { action: 'dead_letters.discard', target: 'installation' } },
        schema: {
          tags,
          summary:
            'Discard dead letters: one (event_id + activity_id) or up to 100 a filter selects; recorded on each route',
          body: DeadLetterSelection,
          response: { 200: DeadLetterDiscardResponse, ...errors },
        },
      },
      async (request) => await service.discard(request.body, credentialLabel(request.credential)),
    );
  };
