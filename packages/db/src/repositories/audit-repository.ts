import { and, desc, eq, gte, lte, or, lt, type SQL } from 'drizzle-orm';
import type { Db } from '../client';
import type { Cursor } from '../cursor';
import { auditLog } from '../schema';

export type AuditRow = typeof auditLog.$inferSelect;
export type NewAuditRow = Omit<typeof auditLog.$inferInsert, 'at'>;

export interface AuditQuery {
  limit: number;
  cursor?: Cursor;
  actor?: string;
  action?: string;
  activityId?: string;
  targetType?: string;
  targetId?: string;
  /** Entries at or after this instant. */
  from?: Date;
  /** Entries at or before this instant. */
  to?: Date;
}

/** The audit log: appended to, listed newest first; never changed (the table's triggers refuse it). */
export function createAuditRepository(db: Db) {
  return {
    async append(entry: NewAuditRow): Promise<void> {
      await db.insert(auditLog).values(entry);
    },

    /** Newest first, keyset over (at, id); `limit` rows at most. */
    async list(query: AuditQuery): Promise<AuditRow[]> {
      const conditions: SQL[] = [];
      if (query.actor !== undefined) conditions.push(eq(auditLog.actor, query.actor));
      if (query.action !== undefined) conditions.push(eq(auditLog.action, query.action));
      if (query.activityId !== undefined) conditions.push(eq(auditLog.activityId, query.activityId));
      if (query.targetType !== undefined) conditions.push(eq(auditLog.targetType, query.targetType));
      if (query.targetId !== undefined) conditions.push(eq(auditLog.targetId, query.targetId));
      if (query.from !== undefined) conditions.push(gte(auditLog.at, query.from));
      if (query.to !== undefined) conditions.push(lte(auditLog.at, query.to));
      const { cursor } = query;
      if (cursor !== undefined) {
        conditions.push(
          or(lt(auditLog.at, cursor.createdAt), and(eq(auditLog.at, cursor.createdAt), lt(auditLog.id, cursor.id)))!,
        );
      }
      return await db
        .select()
        .from(auditLog)
        .where(and(...conditions))
        .orderBy(desc(auditLog.at), desc(auditLog.id))
        .limit(query.limit);
    },
  };
}

export type AuditRepository = ReturnType<typeof createAuditRepository>;
