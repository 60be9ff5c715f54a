import {
  ActivityDefinition,
  ActivityListQuery,
  ActivityPage,
  ActivityRecord,
  EnableActivityQuery,
  EnableActivityResponse,
  IdParams,
  NoContent,
  OptionalDisableActivityRequest,
  Problem,
} from '@activity-core/contracts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AuditSpec } from '../plugins/audit';
import type { ActivityService } from '../services/activity-service';
import { credentialLabel } from '../services/event-service';

const errors = { 400: Problem, 401: Problem, 404: Problem, 409: Problem };

export const activityRoutes =
  (service: ActivityService): FastifyPluginAsyncZod =>
  async (app) => {
    const read = { auth: 'management', role: 'read' } as const;
    const write = (audit: AuditSpec) => ({ auth: 'management', role: 'write', owns: 'activity', audit }) as const;
    const tags = ['activities'];

    app.post(
      '/v1/activities',
      {
        config: write({ action: 'activity.create', target: 'activity' }),
        schema: {
          tags,
          summary: 'Register an activity',
          body: ActivityDefinition,
          response: { 201: ActivityRecord, ...errors },
        },
      },
      async (request, reply) =>
        reply.status(201).send(await service.create(request.body, credentialLabel(request.credential))),
    );

    app.put(
      '/v1/activities/:id',
      {
        config: write({
          action: (status) => (status === 201 ? 'activity.create' : 'activity.update'),
          target: 'activity',
        }),
        schema: {
          tags,
          summary: 'Create or replace an activity by id (safe to repeat: an identical body changes nothing)',
          params: IdParams,
          body: ActivityDefinition,
          response: { 200: ActivityRecord, 201: ActivityRecord, ...errors },
        },
      },
      async (request, reply) => {
        const { record, created } = await service.put(
          request.params.id,
          request.body,
          credentialLabel(request.credential),
        );
        return reply.status(created ? 201 : 200).send(record);
      },
    );

    app.get(
      '/v1/activities/:id',
      {
        config: read,
        schema: { tags, summary: 'Get an activity', params: IdParams, response: { 200: ActivityRecord, ...errors } },
      },
      async (request) => await service.get(request.params.id),
    );

    app.get(
      '/v1/activities',
      {
        config: read,
        schema: {
          tags,
          summary: 'List activities, newest first',
          querystring: ActivityListQuery,
          response: { 200: ActivityPage, ...errors },
        },
      },
      async (request) => await service.list(request.query),
    );

    app.delete(
      '/v1/activities/:id',
      {
        config: write({ action: 'activity.delete', target: 'activity' }),
        schema: {
          tags,
          summary: 'Delete an activity and its schedules; run history stays',
          params: IdParams,
          response: { 204: NoContent, ...errors },
        },
      },
      async (request, reply) => {
        await service.remove(request.params.id, credentialLabel(request.credential));
        return reply.status(204).send(null);
      },
    );

    // Operators switch an activity off (and back on) without changing what it does.
    const operate = (action: 'activity.enable' | 'activity.disable') =>
      ({ auth: 'management', role: 'operate', owns: 'activity', audit: { action, target: 'activity' } }) as const;

    app.post(
      '/v1/activities/:id/enable',
      {
        config: operate('activity.enable'),
        schema: {
          tags,
          summary:
            'Enable an activity (idempotent); answers how many events it held while disabled, and releases them with release_held=true',
          params: IdParams,
          querystring: EnableActivityQuery,
          response: { 200: EnableActivityResponse, ...errors },
        },
      },
      async (request) =>
        await service.enable(request.params.id, credentialLabel(request.credential), request.query.release_held),
    );

    app.post(
      '/v1/activities/:id/disable',
      {
        config: operate('activity.disable'),
        schema: {
          tags,
          summary:
            'Disable an activity (idempotent); `when_disabled` in the body says whether its events are dropped or held meanwhile',
          params: IdParams,
          body: OptionalDisableActivityRequest,
          response: { 200: ActivityRecord, ...errors },
        },
      },
      async (request) =>
        await service.setEnabled(
          request.params.id,
          false,
          credentialLabel(request.credential),
          request.body.when_disabled,
        ),
    );
  };
