import { AuditAction, AuditActor, AuditEntry, AuditTargetType, Page, Problem } from '@activity-core/contracts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AuditService } from '../services/audit-service';

const Rfc3339 = z.iso.datetime({
  offset: true,
  message: 'must be an RFC 3339 date-time with a timezone, e.g. 2026-03-01T09:00:00Z',
});
const AuditQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(100, 'a cursor is at most 100 characters').optional(),
  actor: AuditActor.optional().meta({ description: 'Only entries of this credential, e.g. `api_key:3f9a0c1b2d4e`.' }),
  action: AuditAction.optional(),
  activity_id: z
    .uuid({ message: 'must be a UUID' })
    .transform((id) => id.toLowerCase())
    .optional()
    .meta({ description: 'Only entries about this activity (its definition, schedules and runs).' }),
  target_type: AuditTargetType.optional(),
  target_id: z.string().min(1).max(200).optional().meta({ description: 'Only entries about this target id or name.' }),
  from: Rfc3339.optional().meta({ description: 'Only entries at or after this instant.' }),
  to: Rfc3339.optional().meta({ description: 'Only entries at or before this instant.' }),
});

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
          response: { 200: Page(AuditEntry), 400: Problem, 401: Problem },
        },
      },
      async (request) => await service.list(request.query),
    );
  };
