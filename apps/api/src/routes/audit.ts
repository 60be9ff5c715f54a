import { AuditPage, AuditQuery, Problem } from '@activity-core/contracts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AuditService } from '../services/audit-service';

export const auditRoutes =
  (service: AuditService): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      '/v1/audit',
      {
        config: { auth: 'management', role: 'read' },
        schema: {
          tags: ['audit'],
          summary: 'The audit log: every change and operator action, newest first, with filters and cursor pagination',
          description:
            'Who (`actor`), what (`action` on `target_type`/`target_id`, and the activity concerned), the answer (`outcome`, `status`) and the request id. ' +
            'Refused attempts of a known key (403, 404, …) are recorded too; answers to unknown keys and rate-limited requests are not.',
          querystring: AuditQuery,
          response: { 200: AuditPage, 400: Problem, 401: Problem },
        },
      },
      async (request) => await service.list(request.query),
    );
  };
