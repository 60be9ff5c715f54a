import { and, asc, eq, inArray, isNull, ne, sql } from 'drizzle-orm';
import type { Db } from '../client';
import { activityRuns, eventCancellations, eventCancelScans, events } from '../schema';

export type EventCancelScanRow = typeof eventCancelScans.$inferSelect;
export type EventCancellationRow = typeof eventCancellations.$inferSelect;

/** A running run a cancel_on match is evaluated against: its trigger event as stored (null if forgotten by retention). */
export interface CancelCandidate {
  runId: string;
  workflowId: string;
  triggerEvent: unknown;
}

/** What a scan decided: the runs to cancel and how many evaluations failed. */
export interface CancelScanDecision {
  cancel: { runId: string; workflowId: string; detail: string }[];
  errors: number;
}

export interface CancelScanInput {
  eventId: string;
  activityId: string;
  activityVersion: number;
  activityName: string;
  /** Most running runs examined; more are left alone and the scan is recorded as capped. */
  maxRuns: number;
  decide: (candidates: readonly CancelCandidate[]) => CancelScanDecision;
}

export function createCancellationsRepository(db: Db) {
  return {
    /** Which activities this event has already scanned, and its cancellations still waiting for Temporal. */
    async state(eventId: string): Promise<{ scanned: Set<string>; pending: EventCancellationRow[] }> {
      const [scans, pending] = await Promise.all([
        db
          .select({ activityId: eventCancelScans.activityId })
          .from(eventCancelScans)
          .where(eq(eventCancelScans.eventId, eventId)),
        db
          .select()
          .from(eventCancellations)
          .where(and(eq(eventCancellations.eventId, eventId), eq(eventCancellations.outcome, 'pending')))
          .orderBy(asc(eventCancellations.createdAt), asc(eventCancellations.runId)),
      ]);
      return { scanned: new Set(scans.map((row) => row.activityId)), pending };
    },

    /**
     * Looks once at one activity's running runs for an event: reads at most
     * `maxRuns` of them (oldest first) with their trigger events, lets
     * `decide` choose, and records the look and its choices (as `pending`
     * cancellations) in one transaction. Returns the new pending rows, or
     * undefined when this event had already scanned this activity (a
     * redelivery, a retry, a concurrent dispatcher): scans are made once.
     */
    async scan(input: CancelScanInput): Promise<EventCancellationRow[] | undefined> {
      return await db.transaction(async (tx) => {
        // The marker first: a concurrent scan of the same pair waits here, then finds it taken.
        const [marker] = await tx
          .insert(eventCancelScans)
          .values({
            eventId: input.eventId,
            activityId: input.activityId,
            activityVersion: input.activityVersion,
            activityName: input.activityName,
            examined: 0,
            capped: false,
            matched: 0,
            errors: 0,
          })
          .onConflictDoNothing()
          .returning({ eventId: eventCancelScans.eventId });
        if (marker === undefined) return undefined;
        const rows = await tx
          .select({ runId: activityRuns.runId, workflowId: activityRuns.workflowId, triggerEvent: events.payload })
          .from(activityRuns)
          .leftJoin(events, eq(events.eventId, activityRuns.eventId))
          .where(
            and(
              eq(activityRuns.activityId, input.activityId),
              inArray(activityRuns.status, ['running', 'waiting_for_slot']),
              ne(activityRuns.eventId, input.eventId),
            ),
          )
          .orderBy(asc(activityRuns.createdAt), asc(activityRuns.runId))
          .limit(input.maxRuns + 1);
        const capped = rows.length > input.maxRuns;
        const candidates = rows.slice(0, input.maxRuns);
        const decision = input.decide(candidates);
        await tx
          .update(eventCancelScans)
          .set({ examined: candidates.length, capped, matched: decision.cancel.length, errors: decision.errors })
          .where(and(eq(eventCancelScans.eventId, input.eventId), eq(eventCancelScans.activityId, input.activityId)));
        if (decision.cancel.length === 0) return [];
        return await tx
          .insert(eventCancellations)
          .values(
            decision.cancel.map((run) => ({
              eventId: input.eventId,
              runId: run.runId,
              activityId: input.activityId,
              workflowId: run.workflowId,
              detail: run.detail,
            })),
          )
          .onConflictDoNothing()
          .returning();
      });
    },

    /**
     * Records Temporal's answer for one pending cancellation; a run whose
     * cancellation was taken names this event as what cancelled it (the
     * first such event only).
     */
    async settle(eventId: string, runId: string, outcome: 'cancel_requested' | 'already_closed'): Promise<void> {
      await db.transaction(async (tx) => {
        await tx
          .update(eventCancellations)
          .set({ outcome, updatedAt: sql`now()` })
          .where(
            and(
              eq(eventCancellations.eventId, eventId),
              eq(eventCancellations.runId, runId),
              eq(eventCancellations.outcome, 'pending'),
            ),
          );
        if (outcome === 'cancel_requested') {
          await tx
            .update(activityRuns)
            .set({ cancelledByEvent: eventId })
            .where(and(eq(activityRuns.runId, runId), isNull(activityRuns.cancelledByEvent)));
        }
      });
    },

    /** The event's cancel_on record: every activity it scanned and every run it chose to cancel. */
    async listForEvent(
      eventId: string,
    ): Promise<{ scans: EventCancelScanRow[]; cancellations: EventCancellationRow[] }> {
      const [scans, cancellations] = await Promise.all([
        db
          .select()
          .from(eventCancelScans)
          .where(eq(eventCancelScans.eventId, eventId))
          .orderBy(asc(eventCancelScans.scannedAt), asc(eventCancelScans.activityId)),
        db
          .select()
          .from(eventCancellations)
          .where(eq(eventCancellations.eventId, eventId))
          .orderBy(asc(eventCancellations.createdAt), asc(eventCancellations.runId)),
      ]);
      return { scans, cancellations };
    },
  };
}

export type CancellationsRepository = ReturnType<typeof createCancellationsRepository>;
