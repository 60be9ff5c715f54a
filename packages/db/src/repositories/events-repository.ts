import type { EventEnvelope, EventIdOrigin, FilteredRouteOutcome } from '@activity-core/contracts';
import { and, asc, eq, lte, sql } from 'drizzle-orm';
import type { Db } from '../client';
import { eventRoutes, events } from '../schema';

export type EventRow = typeof events.$inferSelect;
export type EventRouteRow = typeof eventRoutes.$inferSelect;

export interface NewRoute {
  activityId: string;
  activityVersion: number;
  activityName: string;
  workflowId: string;
  runId: string;
  /** `pending` (a run is due) unless a filter stopped the event. @default 'pending' */
  outcome?: 'pending' | FilteredRouteOutcome;
  /** Why a filter stopped the event. */
  detail?: string;
}

export type AcceptResult =
  | { kind: 'accepted'; event: EventRow; routes: EventRouteRow[] }
  | { kind: 'duplicate'; event: EventRow; routes: EventRouteRow[] }
  | { kind: 'fingerprint_mismatch'; event: EventRow };

export function createEventsRepository(db: Db) {
  return {
    /**
     * Stores an event and its routing decisions in one transaction, or
     * reports that the id is already taken. Concurrent deliveries of one id
     * serialise on the primary key: the loser's insert waits for the winner's
     * commit and then reads the winner's routes.
     *
     * `leaseMs` keeps background dispatchers off the event while the caller
     * routes it inline.
     */
    async accept(input: {
      envelope: EventEnvelope;
      fingerprint: string;
      idOrigin: EventIdOrigin;
      routes: NewRoute[];
      leaseMs: number;
      /** Which credential delivered it (see the `credential` column); never a key itself. */
      credential?: string;
      /** emit_event steps from an external event. @default 0 */
      hops?: number;
    }): Promise<AcceptResult> {
      return await db.transaction(async (tx) => {
        const { envelope } = input;
        // Filtered routes are settled at birth; only pending ones need Temporal.
        const settled = input.routes.every((route) => (route.outcome ?? 'pending') !== 'pending');
        const inserted = await tx
          .insert(events)
          .values({
            eventId: envelope.event_id,
            source: envelope.source,
            eventType: envelope.event_type,
            subject: envelope.subject ?? null,
            occurredAt: new Date(envelope.occurred_at),
            payload: envelope,
            fingerprint: input.fingerprint,
            idOrigin: input.idOrigin,
            credential: input.credential ?? null,
            hops: input.hops ?? 0,
            routingState: settled ? 'routed' : 'pending',
            routedAt: settled ? sql`now()` : null,
            nextAttemptAt: sql`now() + make_interval(secs => ${input.leaseMs / 1000})`,
          })
          .onConflictDoNothing({ target: events.eventId })
          .returning();
        const event = inserted[0];
        if (event !== undefined) {
          const routes =
            input.routes.length === 0
              ? []
              : await tx
                  .insert(eventRoutes)
                  .values(input.routes.map((route) => ({ ...route, outcome: route.outcome ?? 'pending', detail: route.detail ?? null, eventId: envelope.event_id })))
                  .returning();
          return { kind: 'accepted', event, routes };
        }
        const [existing] = await tx.select().from(events).where(eq(events.eventId, envelope.event_id));
        if (existing === undefined) throw new Error(`event ${envelope.event_id} conflicted but cannot be read`);
        if (existing.fingerprint !== input.fingerprint) return { kind: 'fingerprint_mismatch', event: existing };
        const routes = await tx
          .select()
          .from(eventRoutes)
          .where(eq(eventRoutes.eventId, envelope.event_id))
          .orderBy(asc(eventRoutes.createdAt), asc(eventRoutes.activityId));
        return { kind: 'duplicate', event: existing, routes };
      });
    },

    async get(eventId: string): Promise<{ event: EventRow; routes: EventRouteRow[] } | undefined> {
      const [event] = await db.select().from(events).where(eq(events.eventId, eventId));
      if (event === undefined) return undefined;
      const routes = await db
        .select()
        .from(eventRoutes)
        .where(eq(eventRoutes.eventId, eventId))
        .orderBy(asc(eventRoutes.createdAt), asc(eventRoutes.activityId));
      return { event, routes };
    },

    /** Records Temporal's answer for one route. A settled route never goes back to pending. */
    async setRouteOutcome(eventId: string, activityId: string, outcome: 'started' | 'duplicate'): Promise<void> {
      await db
        .update(eventRoutes)
        .set({ outcome, updatedAt: sql`now()` })
        .where(and(eq(eventRoutes.eventId, eventId), eq(eventRoutes.activityId, activityId), eq(eventRoutes.outcome, 'pending')));
    },

    /** Marks the event routed once none of its routes is pending. */
    async markRoutedIfSettled(eventId: string): Promise<boolean> {
      const rows = await db
        .update(events)
        .set({ routingState: 'routed', routedAt: sql`now()`, lastError: null })
        .where(
          and(
            eq(events.eventId, eventId),
            eq(events.routingState, 'pending'),
            sql`NOT EXISTS (SELECT 1 FROM ${eventRoutes} WHERE ${eventRoutes.eventId} = ${eventId} AND ${eventRoutes.outcome} = 'pending')`,
          ),
        )
        .returning({ eventId: events.eventId });
      return rows.length > 0;
    },

    /** Records a failed routing attempt and when to try again. */
    async recordRoutingFailure(eventId: string, message: string, retryInMs: number): Promise<void> {
      await db
        .update(events)
        .set({
          lastError: message.slice(0, 2000),
          nextAttemptAt: sql`now() + make_interval(secs => ${retryInMs / 1000})`,
        })
        .where(and(eq(events.eventId, eventId), eq(events.routingState, 'pending')));
    },

    /**
     * Claims up to `limit` pending events whose retry time has come, pushing
     * their next attempt `leaseMs` ahead so other dispatchers skip them.
     * `SKIP LOCKED` lets any number of dispatchers run side by side.
     */
    async claimPending(limit: number, leaseMs: number): Promise<EventRow[]> {
      return await db.transaction(async (tx) => {
        const due = await tx
          .select({ eventId: events.eventId })
          .from(events)
          .where(and(eq(events.routingState, 'pending'), lte(events.nextAttemptAt, sql`now()`)))
          .orderBy(asc(events.nextAttemptAt))
          .limit(limit)
          .for('update', { skipLocked: true });
        if (due.length === 0) return [];
        return await tx
          .update(events)
          .set({
            routingAttempts: sql`${events.routingAttempts} + 1`,
            nextAttemptAt: sql`now() + make_interval(secs => ${leaseMs / 1000})`,
          })
          .where(sql`${events.eventId} IN (${sql.join(due.map((row) => sql`${row.eventId}`), sql`, `)})`)
          .returning();
      });
    },

    /**
     * Forgets up to `limit` routed events received before `olderThan`, with
     * their routing decisions: after that, their ids are free again (see
     * docs/ingress.md, "How long ids are remembered"). Pending events are
     * never removed — they are acknowledged and not yet routed. Safe with any
     * number of concurrent callers: rows another sweeper holds are skipped.
     * Returns how many events were removed.
     */
    async purgeRoutedBefore(olderThan: Date, limit: number): Promise<number> {
      const result = await db.execute(sql`
        WITH doomed AS (
          SELECT ${events.eventId} AS event_id FROM ${events}
          WHERE ${events.receivedAt} < ${olderThan.toISOString()}::timestamptz AND ${events.routingState} = 'routed'
          ORDER BY ${events.receivedAt}
          LIMIT ${limit}
          FOR UPDATE SKIP LOCKED
        ), routes AS (
          DELETE FROM ${eventRoutes} WHERE ${eventRoutes.eventId} IN (SELECT event_id FROM doomed)
        )
        DELETE FROM ${events} WHERE ${events.eventId} IN (SELECT event_id FROM doomed)`);
      return result.rowCount ?? 0;
    },

    async listRoutes(eventId: string): Promise<EventRouteRow[]> {
      return await db
        .select()
        .from(eventRoutes)
        .where(eq(eventRoutes.eventId, eventId))
        .orderBy(asc(eventRoutes.createdAt), asc(eventRoutes.activityId));
    },
  };
}

export type EventsRepository = ReturnType<typeof createEventsRepository>;
