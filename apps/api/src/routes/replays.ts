import {
  BulkReplayDryRun,
  BulkReplayRecord,
  BulkReplayRequest,
  IdParams,
  KeyHeaders,
  Problem,
  OptionalReplayRequest,
  ReplayResponse,
} from '@activity-core/contracts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { credentialLabel } from '../services/event-service';
import type { ReplayService } from '../services/replay-service';

const errors = { 400: Problem, 401: Problem, 403: Problem, 404: Problem };
const replayErrors = { ...errors, 503: Problem };

/** Replays of accepted events against today's definitions (docs/recovery.md). */
export const replayRoutes =
  (service: ReplayService): FastifyPluginAsyncZod =>
  async (app) => {
    const tags = ['events'];
    // Replays act on every activity an event matches today: the installation's, like the schedule reconcile.
    const operate = { auth: 'management', role: 'operate', owns: 'installation' } as const;

    app.post(
      '/v1/events/:event_id/replay',
      {
        config: { ...operate, audit: { action: 'event.replay', target: 'installation' } },
        schema: {
          tags,
          summary:
            "Replay an accepted event against today's definitions: `if_no_runs` (default) starts only runs that never ran; `force` starts replay-{run_id}:{n}",
          params: z.object({ event_id: z.string().min(1) }),
          headers: KeyHeaders,
          body: OptionalReplayRequest,
          response: { 200: ReplayResponse, ...replayErrors, 410: Problem },
        },
      },
      async (request) =>
        await service.replayOne(
          request.params.event_id,
          request.body.mode,
          credentialLabel(request.credential),
          request.headers['idempotency-key'],
        ),
    );

    app.post(
      '/v1/events/replay',
      {
        config: {
          ...operate,
          audit: {
            action: 'events.bulk_replay',
            target: 'installation',
            skip: (request) => (request.body as { dry_run?: unknown } | undefined)?.dry_run === true,
          },
        },
        schema: {
          tags,
          summary:
            'Replay the stored events a filter selects: a count with dry_run, else a bulk replay with a progress record',
          headers: KeyHeaders,
          body: BulkReplayRequest,
          response: { 200: BulkReplayDryRun, 202: BulkReplayRecord, ...replayErrors },
        },
      },
      async (request, reply) => {
        const outcome = await service.bulk(
          request.body,
          credentialLabel(request.credential),
          request.headers['idempotency-key'],
        );
        switch (outcome.kind) {
          case 'counted':
            return reply.status(200).send(outcome.answer);
          case 'recorded':
            return reply.status(202).header('location', `/v1/events/replay/${outcome.answer.id}`).send(outcome.answer);
        }
      },
    );

    app.get(
      '/v1/events/replay/:id',
      {
        config: { auth: 'management', role: 'read' },
        schema: {
          tags,
          summary: 'The progress of a bulk replay',
          params: IdParams,
          response: { 200: BulkReplayRecord, ...errors },
        },
      },
      async (request) => await service.getBulk(request.params.id),
    );
  };
