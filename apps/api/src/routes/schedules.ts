import {
  ActivitySchedules,
  type AuditAction,
  BackfillRequest,
  BackfillResponse,
  FireExplanation,
  FirePage,
  FiresQuery,
  IdParams,
  KeyHeaders,
  OptionalNote,
  Problem,
  ReconcileQuery,
  ReconcileResponse,
  ResumeResponse,
  Rfc3339DateTime,
  TriggerNowResponse,
} from '@activity-core/contracts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ScheduleService } from '../services/schedule-service';

const FireParams = IdParams.extend({ scheduled_for: Rfc3339DateTime });
const errors = { 400: Problem, 401: Problem, 404: Problem, 409: Problem, 503: Problem };

export const scheduleRoutes =
  (service: ScheduleService): FastifyPluginAsyncZod =>
  async (app) => {
    const config = { auth: 'management', role: 'read' } as const;
    const operate = (action: AuditAction) =>
      ({ auth: 'management', role: 'operate', owns: 'activity', audit: { action, target: 'activity' } }) as const;
    const tags = ['schedules'];

    app.get(
      '/v1/activities/:id/schedules',
      {
        config,
        schema: {
          tags,
          summary: "The Temporal Schedules of an activity's cron triggers, their state and next fire times",
          params: IdParams,
          response: { 200: ActivitySchedules, ...errors },
        },
      },
      async (request) => await service.describe(request.params.id),
    );

    app.post(
      '/v1/activities/:id/schedules/pause',
      {
        config: operate('schedules.pause'),
        schema: {
          tags,
          summary: "Pause the activity's schedules with a note (kept across reconciliation; idempotent)",
          params: IdParams,
          body: OptionalNote,
          response: { 200: ActivitySchedules, ...errors },
        },
      },
      async (request) => await service.pause(request.params.id, request.body.note),
    );

    app.post(
      '/v1/activities/:id/schedules/resume',
      {
        config: operate('schedules.resume'),
        schema: {
          tags,
          summary: 'Resume paused schedules; the misfire policy decides what was missed while paused (idempotent)',
          params: IdParams,
          body: OptionalNote,
          response: { 200: ResumeResponse, ...errors },
        },
      },
      async (request) => await service.resume(request.params.id, request.body.note),
    );

    app.post(
      '/v1/activities/:id/schedules/trigger',
      {
        config: operate('schedules.trigger'),
        schema: {
          tags,
          summary: 'Trigger one run now: manual-{activity_id}:{Idempotency-Key} (a repeated key is the same run)',
          params: IdParams,
          headers: KeyHeaders,
          response: { 202: TriggerNowResponse, ...errors },
        },
      },
      async (request, reply) =>
        reply.status(202).send(await service.trigger(request.params.id, request.headers['idempotency-key'])),
    );

    app.post(
      '/v1/activities/:id/schedules/backfill',
      {
        config: operate('schedules.backfill'),
        schema: {
          tags,
          summary:
            'Run every nominal fire time in [start, end] that has no run yet; with rerun_failed, re-run those whose run failed (safe to repeat)',
          params: IdParams,
          body: BackfillRequest,
          response: { 200: BackfillResponse, ...errors },
        },
      },
      async (request) => await service.backfill(request.params.id, request.body),
    );

    app.get(
      '/v1/activities/:id/fires',
      {
        config,
        schema: {
          tags,
          summary:
            "Every decision about the activity's cron fire times, newest first: which ran, which did not, and why",
          params: IdParams,
          querystring: FiresQuery,
          response: { 200: FirePage, ...errors },
        },
      },
      async (request) => await service.fires(request.params.id, request.query),
    );

    app.get(
      '/v1/activities/:id/fires/:scheduled_for',
      {
        config,
        schema: {
          tags,
          summary: "Why did (or didn't) this nominal fire time run?",
          params: FireParams,
          response: { 200: FireExplanation, ...errors },
        },
      },
      async (request) => await service.explain(request.params.id, request.params.scheduled_for),
    );

    app.post(
      '/v1/schedules/reconcile',
      {
        config: {
          auth: 'management',
          role: 'operate',
          owns: 'installation',
          audit: { action: 'schedules.reconcile', target: 'installation' },
        },
        schema: {
          tags,
          summary:
            "Make Temporal Schedules match Postgres now, from Temporal's schedule listing (compare=describe: describing every schedule); also done at start-up and periodically by workers; idempotent",
          querystring: ReconcileQuery,
          response: { 200: ReconcileResponse, 401: Problem, 503: Problem },
        },
      },
      async (request) => await service.reconcile(request.query.compare),
    );
  };
