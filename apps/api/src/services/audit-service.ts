import { isLowercaseUuid, type AuditEntry } from '@activity-core/contracts';
import { decodeCursor, encodeCursor, type AuditRepository, type AuditRow, type NewAuditRow } from '@activity-core/db';
import { keysetPage, type Page } from './pagination';

export interface AuditListQuery {
  limit: number;
  cursor?: string | undefined;
  actor?: string | undefined;
  action?: string | undefined;
  activity_id?: string | undefined;
  target_type?: string | undefined;
  target_id?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
}

function toEntry(row: AuditRow): AuditEntry {
  return {
    id: row.id,
    at: row.at.toISOString(),
    actor: row.actor,
    action: row.action as AuditEntry['action'],
    target_type: row.targetType as AuditEntry['target_type'],
    target_id: row.targetId,
    activity_id: row.activityId,
    outcome: row.outcome as AuditEntry['outcome'],
    status: row.status,
    request_id: row.requestId,
  };
}

export function createAuditService(deps: { audit: AuditRepository }) {
  return {
    async record(entry: Omit<NewAuditRow, 'id'>): Promise<void> {
      await deps.audit.append({ id: crypto.randomUUID(), ...entry });
    },

    async list(query: AuditListQuery): Promise<Page<AuditEntry>> {
      return await keysetPage({
        limit: query.limit,
        cursor: query.cursor,
        // The id half is compared with a uuid column: anything else is not a cursor this API issued.
        decode: (value) => {
          const cursor = decodeCursor(value);
          return cursor !== undefined && isLowercaseUuid(cursor.id) ? cursor : undefined;
        },
        encode: (last: AuditRow) => encodeCursor({ createdAt: last.at, id: last.id }),
        fetch: ({ limit, cursor }) =>
          deps.audit.list({
            limit,
            ...(cursor === undefined ? {} : { cursor }),
            ...(query.actor === undefined ? {} : { actor: query.actor }),
            ...(query.action === undefined ? {} : { action: query.action }),
            ...(query.activity_id === undefined ? {} : { activityId: query.activity_id }),
            ...(query.target_type === undefined ? {} : { targetType: query.target_type }),
            ...(query.target_id === undefined ? {} : { targetId: query.target_id }),
            ...(query.from === undefined ? {} : { from: new Date(query.from) }),
            ...(query.to === undefined ? {} : { to: new Date(query.to) }),
          }),
        toItem: toEntry,
      });
    },
  };
}

export type AuditService = ReturnType<typeof createAuditService>;
