import {
  ActivityVersion,
  ActivityVersionPage,
  DefinitionDiff,
  DiffQuery,
  IdParams,
  Problem,
  VersionListQuery,
  VersionNumber,
} from '@activity-core/contracts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { DefinitionHistoryService } from '../services/definition-history-service';

const VersionParams = IdParams.extend({ version: VersionNumber });
const errors = { 400: Problem, 401: Problem, 404: Problem, 503: Problem };

/** The history outlives the activity: what ran, and which version, stays answerable. */
const DELETED_STAY_READABLE =
  'The versions of a deleted activity stay readable, by design: runs name the version they ran, so its history answers 200 ' +
  'while `GET /v1/activities/{id}` answers 404. A 404 here means the id never named an activity (or the version does not exist).';

export const definitionHistoryRoutes =
  (service: DefinitionHistoryService): FastifyPluginAsyncZod =>
  async (app) => {
    const config = { auth: 'management', role: 'read' } as const;
    const tags = ['activities'];

    app.get(
      '/v1/activities/:id/versions',
      {
        config,
        schema: {
          tags,
          summary: 'Versions of an activity, newest first, with who wrote each and when (deleted activities too)',
          description: DELETED_STAY_READABLE,
          params: IdParams,
          querystring: VersionListQuery,
          response: { 200: ActivityVersionPage, ...errors },
        },
      },
      async (request) => await service.list(request.params.id, request.query),
    );

    app.get(
      '/v1/activities/:id/versions/:version',
      {
        config,
        schema: {
          tags,
          summary: 'One version of an activity with its definition, who wrote it and when',
          description: DELETED_STAY_READABLE,
          params: VersionParams,
          response: { 200: ActivityVersion, ...errors },
        },
      },
      async (request) => await service.get(request.params.id, request.params.version),
    );

    app.get(
      '/v1/activities/:id/diff',
      {
        config,
        schema: {
          tags,
          summary: 'What changed between two versions of an activity, as an RFC 6902 JSON Patch',
          description:
            'The patch turns the `from` definition into the `to` definition. Without `to`, the current version; without `from`, the version before `to` ' +
            '(so a bare `GET …/diff` is the last change). `remove` and `replace` carry the value they take away in `old_value`. ' +
            DELETED_STAY_READABLE,
          params: IdParams,
          querystring: DiffQuery,
          response: { 200: DefinitionDiff, ...errors },
        },
      },
      async (request) => await service.diff(request.params.id, request.query),
    );
  };
