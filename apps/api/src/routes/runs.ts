import { Page, Problem, RunRecord, RunStatus, RunWithTasks, TriggerType } from '@activity-core/contracts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RunService } from '../services/run-service';

const RunParams = z.object({ run_id: z.uuid({ message: 'must be a UUID' }).transform((id) => id.toLowerCase()) });
const ListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().optional(),
  activity_id: z.uuid().transform((id) => id.toLowerCase()).optional(),
  status: RunStatus.optional(),
  trigger_type: TriggerType.optional(),
  event_id: z.string().min(1).optional(),
});
const errors = { 400: Problem, 401: Problem, 404: Problem };

export const runRoutes = (service: RunService): FastifyPluginAsyncZod =>
  async (app) => {
    const config = { auth: 'management' as const };
    const tags = ['runs'];

    app.get(
      '/v1/runs',
      { config, schema: { tags, summary: 'List runs, newest first, with filters and cursor pagination', querystring: ListQuery, response: { 200: Page(RunRecord), ...errors } } },
      async (request) => await service.list(request.query),
    );

    app.get(
      '/v1/runs/:run_id',
      {
        config,
        schema: { tags, summary: 'A run with its task instances', params: RunParams, response: { 200: RunWithTasks.extend({ temporal_ui_url: z.string() }), ...errors } },
      },
      async (request) => await service.get(request.params.run_id),
    );

    app.post(
      '/v1/runs/:run_id/cancel',
      {
        config,
        schema: {
          tags,
          summary: 'Request cancellation of a running run',
          params: RunParams,
          response: { 202: z.object({ run_id: z.string(), cancel_requested: z.boolean() }), ...errors },
        },
      },
      async (request, reply) => reply.status(202).send(await service.cancel(request.params.run_id)),
    );
  };
