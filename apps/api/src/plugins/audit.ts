import {
  isLowercaseUuid,
  MAX_AUDIT_REQUEST_ID,
  type AuditAction,
  type AuditOutcome,
  type AuditTargetType,
} from '@activity-core/contracts';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuditService } from '../services/audit-service';
import { credentialLabel } from '../services/event-service';
import type { OwnershipLookup } from './auth';

/** What an audited route records: its action (by status where one route is two actions) and what it acts on. */
export interface AuditSpec {
  action: AuditAction | ((status: number) => AuditAction);
  target: AuditTargetType;
  /** A request that changes nothing (a bulk re-run's dry run) is not recorded. */
  skip?: (request: FastifyRequest) => boolean;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    audit?: AuditSpec;
  }
}

export function auditOutcome(status: number): AuditOutcome {
  if (status < 400) return 'succeeded';
  return status < 500 ? 'refused' : 'failed';
}

const record = (value: unknown): Record<string, unknown> =>
  typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};

/** The id a created resource's answer carries (`id`), when the answer is a success. */
function answeredId(status: number, payload: unknown): string | undefined {
  if (status >= 300 || typeof payload !== 'string') return undefined;
  try {
    const id = record(JSON.parse(payload)).id;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}

async function targetOf(
  spec: AuditSpec,
  request: FastifyRequest,
  status: number,
  payload: unknown,
  lookup: OwnershipLookup,
): Promise<{ targetId: string | null; activityId: string | null }> {
  const params = record(request.params);
  const body = record(request.body);
  const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);
  const uuid = (value: string | null | undefined): string | null =>
    value !== null && value !== undefined && isLowercaseUuid(value) ? value : null;
  switch (spec.target) {
    case 'activity': {
      const id = text(params.id) ?? answeredId(status, payload) ?? null;
      return { targetId: id, activityId: uuid(id) };
    }
    case 'run': {
      const runId = uuid(text(params.run_id));
      // The entry is worth more than its activity: a failed lookup leaves activity_id null.
      const activityId = runId === null ? undefined : await lookup.runActivity(runId).catch(() => undefined);
      return { targetId: runId, activityId: uuid(activityId) };
    }
    case 'bulk_rerun':
      return { targetId: answeredId(status, payload) ?? null, activityId: uuid(text(record(body.filter).activity_id)) };
    case 'webhook_source':
      return { targetId: text(params.name) ?? text(body.name), activityId: null };
    case 'installation':
      return { targetId: null, activityId: null };
  }
}

/** Longest an answer waits for its audit write; past it the write goes on without holding the answer. */
const AUDIT_WRITE_WAIT_MS = 2_000;

/**
 * Records every answer of an audited route (config.audit) before it is sent:
 * who (the credential's label), what, the outcome and the request id. Answers
 * without a known key (401) and rate-limit refusals (429) are not recorded: they
 * carry no actor, and would let anyone fill the log. A failed write does not
 * change the answer (the action has happened, or not, either way); it is
 * logged at error level with the whole entry, so the record is not lost. The
 * answer waits for the write at most `waitMs`: with Postgres gone the action
 * has already waited out its own connect timeout, and must not wait it out twice.
 */
export function registerAudit(
  app: FastifyInstance,
  options: { audit: AuditService; lookup: OwnershipLookup; waitMs?: number },
): void {
  const waitMs = options.waitMs ?? AUDIT_WRITE_WAIT_MS;
  app.addHook('onSend', async (request, reply, payload) => {
    const spec = request.routeOptions.config.audit;
    const status = reply.statusCode;
    if (spec === undefined || status === 401 || status === 429 || spec.skip?.(request) === true) return payload;
    let entry: Parameters<AuditService['record']>[0] | undefined;
    const write = (async () => {
      const action = typeof spec.action === 'function' ? spec.action(status) : spec.action;
      const { targetId, activityId } = await targetOf(spec, request, status, payload, options.lookup);
      entry = {
        actor: credentialLabel(request.credential),
        action,
        targetType: spec.target,
        // A rejected body's name may be anything: bounded, and without the NUL Postgres cannot store.
        targetId: targetId?.slice(0, 200).replaceAll('\u0000', '') ?? null,
        activityId,
        outcome: auditOutcome(status),
        status,
        requestId: request.id.slice(0, MAX_AUDIT_REQUEST_ID),
      };
      await options.audit.record(entry);
    })().catch((error: unknown) => {
      request.log.error({ err: error, audit: entry }, 'the audit record of this request could not be written');
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([write, new Promise((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
    return payload;
  });
}
