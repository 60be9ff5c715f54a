import {
  HeldDiscardResponse,
  HeldEventListQuery,
  HeldEventPage,
  HeldReleaseResponse,
  IdParams,
  OptionalHeldDiscardRequest,
  OptionalHeldReleaseRequest,
  Problem,
} from '@activity-core/contracts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { credentialLabel } from '../services/event-service';
import type { HeldEventsService } from '../services/held-events-service';

const errors = { 400: Problem, 401: Problem, 403: Problem, 404: Problem };

/** The events a disabled activity held (docs/recovery.md, "Held events"): listed, released, discarded. */
export const heldEventRoutes =
  (service: HeldEventsService): FastifyPluginAsyncZod =>
  async (app) => {
    const tags = ['activities'];
    // Operators release and discard what an activity held, like they enable and disable it.
    const operate = (action: 'activity.held_release' | 'activity.held_discard') =>
      ({ auth: 'management', role: 'operate', owns: 'activity', audit: { action, target: 'activity' } }) as const;

    app.get(
      '/v1/activities/:id/held-events',
      {
        config: { auth: 'management', role: 'read', owns: 'activity' },
        schema: {
          tags,
          summary: 'List the events an activity holds while disabled, oldest first',
          params: IdParams,
          querystring: HeldEventListQuery,
          response: { 200: HeldEventPage, ...errors },
        },
      },
      async (request) => await service.list(request.params.id, request.query),
    );

    app.post(
      '/v1/activities/:id/held-events/release',
      {
        config: operate('activity.held_release'),
        schema: {
          tags,
          summary:
            'Release held events (all, oldest first, or `event_ids`): each becomes pending and starts its run activity-{id}:{event_id} through the dispatcher',
          params: IdParams,
          body: OptionalHeldReleaseRequest,
          response: { 200: HeldReleaseResponse, ...errors, 409: Problem },
        },
      },
      async (request) =>
        await service.release(request.params.id, credentialLabel(request.credential), request.body.event_ids),
    );

    app.post(
      '/v1/activities/:id/held-events/discard',
      {
        config: operate('activity.held_discard'),
        schema: {
          tags,
          summary: 'Discard held events (all, or `event_ids`): each is recorded discarded, with who and when',
          params: IdParams,
          body: OptionalHeldDiscardRequest,
          response: { 200: HeldDiscardResponse, ...errors },
        },
      },
      async (request) =>
        await service.discard(request.params.id, credentialLabel(request.credential), request.body.event_ids),
    );
  };
