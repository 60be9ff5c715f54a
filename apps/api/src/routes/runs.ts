import {
  BulkRerunDryRun,
  BulkRerunRecord,
  BulkRerunRequest,
  CancelResponse,
  IdParams,
  KeyHeaders,
  OptionalRerunRequest,
  PathUuid,
  Problem,
  RerunResponse,
  RunDetail,
  RunListQuery,
  RunPage,
} from '@activity-core/contracts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RunService } from '../services/run-service';

const RunParams = z.object({ run_id: PathUuid });
const errors = { 400: Problem, 401: Problem, 404: Problem };
const rerunErrors = { ...errors, 409: Problem, 503: Problem };

export const runRoutes =
  (service: RunService): FastifyPluginAsyncZod =>
  async (app) => {
    const config = { auth: 'management', role: 'read' } as const;
    const tags = ['runs'];

    app.get(
      '/v1/runs',
      {
        config,
        schema: {
          tags,
          summary: 'List runs, newest first, with filters and cursor pagination',
          querystring: RunListQuery,
          response: { 200: RunPage, ...errors },
        },
      },
      async (request) => await service.list(request.query),
    );

    app.get(
      '/v1/runs/:run_id',
      {
        config,
        schema: {
          tags,
          summary: 'A run with its task instances and its re-run chain',
          params: RunParams,
          response: { 200: RunDetail, ...errors },
        },
      },
      async (request) => await service.get(request.params.run_id),
    );

    app.post(
      '/v1/runs/:run_id/rerun',
      {
        config: {
          auth: 'management',
          role: 'operate',
          owns: 'run',
          audit: { action: 'run.rerun', target: 'run' },
        },
        schema: {
          tags,
          summary:
            'Re-run a run, from the start or from its failed task (rerun-{run_id}:{n}); the same Idempotency-Key names the same re-run',
          params: RunParams,
          headers: KeyHeaders,
          body: OptionalRerunRequest,
          response: { 202: RerunResponse, ...rerunErrors },
        },
      },
      async (request, reply) => {
        const outcome = await service.rerun(
          request.params.run_id,
          request.body.from,
          request.headers['idempotency-key'],
          request.body.priority,
        );
        // Started now or found started (the same Idempotency-Key): the body's status says which.
        return reply.status(202).send(outcome.answer);
      },
    );

    app.post(
      '/v1/runs/rerun',
      {
        config: {
          auth: 'management',
          role: 'operate',
          owns: 'run_selection',
          audit: {
            action: 'runs.bulk_rerun',
            target: 'bulk_rerun',
            skip: (request) => (request.body as { dry_run?: unknown } | undefined)?.dry_run === true,
          },
        },
        schema: {
          tags,
          summary: 'Re-run the runs a filter selects: a count with dry_run, else a bulk re-run with a progress record',
          headers: KeyHeaders,
          body: BulkRerunRequest,
          response: { 200: BulkRerunDryRun, 202: BulkRerunRecord, ...rerunErrors },
        },
      },
      async (request, reply) => {
        const outcome = await service.bulkRerun(request.body, request.headers['idempotency-key']);
        switch (outcome.kind) {
          case 'counted':
            return reply.status(200).send(outcome.answer);
          case 'recorded':
            return reply.status(202).header('location', `/v1/runs/rerun/${outcome.answer.id}`).send(outcome.answer);
        }
      },
    );

    app.get(
      '/v1/runs/rerun/:id',
      {
        config,
        schema: {
          tags,
          summary: 'The progress of a bulk re-run',
          params: IdParams,
          response: { 200: BulkRerunRecord, ...errors },
        },
      },
      async (request) => await service.getBulkRerun(request.params.id),
    );

    app.post(
      '/v1/runs/:run_id/cancel',
      {
        config: {
          auth: 'management',
          role: 'operate',
          owns: 'run',
          audit: { action: 'run.cancel', target: 'run' },
        },
        schema: {
          tags,
          summary: 'Request cancellation of a run that is running or waiting for a slot',
          description:
            "A run `waiting_for_slot` (behind a concurrency limit or its cron trigger's overlap policy) leaves the queue without starting a task. " +
            'Any other status, or a workflow Temporal has already closed, answers `cancel_requested: false` and sends nothing.',
          params: RunParams,
          response: { 202: CancelResponse, ...errors },
        },
      },
      async (request, reply) => reply.status(202).send(await service.cancel(request.params.run_id)),
    );
  };
