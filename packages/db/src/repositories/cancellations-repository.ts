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
  /**
   * How many of the candidates, in order, were examined; fewer than given when
   * the scan's evaluation budget ran out (the rest are left running, and the
   * scan is recorded as capped). Absent: all of them.
   */
  examined?: number;
}

/** Where a page of cancel candidates starts: after this run, in (created_at, run_id) order. */
export interface CancelCandidateCursor {
  createdAt: Date;
  runId: string;
}

/** One activity's scan for one event, decided outside any transaction, recorded by `record`. */
export interface CancelScanRecord {
  eventId: string;
  activityId: string;
  activityVersion: number;
  activityName: string;
  examined: number;
  capped: boolean;
  errors: number;
  cancel: CancelScanDecision['cancel'];
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
     * One page of an activity's `running` and `waiting_for_slot` runs (other
     * than the event's own), oldest first, after `after`, with their trigger
     * events as stored. Read outside any transaction: the scan decides a page
     * with no transaction open, and records its decision with `record`.
     */
    async candidatesPage(input: {
      eventId: string;
      activityId: string;
      after?: CancelCandidateCursor;
      limit: number;
    }): Promise<Array<CancelCandidate & { createdAt: Date }>> {
      return await db
        .select({
          runId: activityRuns.runId,
          workflowId: activityRuns.workflowId,
          triggerEvent: events.payload,
          createdAt: activityRuns.createdAt,
        })
        .from(activityRuns)
        .leftJoin(events, eq(events.eventId, activityRuns.eventId))
        .where(
          and(
            eq(activityRuns.activityId, input.activityId),
            inArray(activityRuns.status, ['running', 'waiting_for_slot']),
            ne(activityRuns.eventId, input.eventId),
            input.after === undefined
              ? undefined
              : sql`(${activityRuns.createdAt}, ${activityRuns.runId}) > (${input.after.createdAt.toISOString()}::timestamptz, ${input.after.runId}::uuid)`,
          ),
        )
        .orderBy(asc(activityRuns.createdAt), asc(activityRuns.runId))
        .limit(input.limit);
    },

    /**
     * Records one (event, activity) scan and its choices (as `pending`
     * cancellations) in one short transaction. Returns the new pending rows,
     * or undefined when this event had already recorded a scan of this
     * activity (a concurrent dispatcher, another process): scans are recorded
     * once, and the first record stands.
     */
    async record(scan: CancelScanRecord): Promise<EventCancellationRow[] | undefined> {
      return await db.transaction(async (tx) => {
        const [marker] = await tx
          .insert(eventCancelScans)
          .values({
            eventId: scan.eventId,
            activityId: scan.activityId,
            activityVersion: scan.activityVersion,
            activityName: scan.activityName,
            examined: scan.examined,
            capped: scan.capped,
            matched: scan.cancel.length,
            errors: scan.errors,
          })
          .onConflictDoNothing()
          .returning({ eventId: eventCancelScans.eventId });
        if (marker === undefined) return undefined;
        if (scan.cancel.length === 0) return [];
        return await tx
          .insert(eventCancellations)
          .values(
            scan.cancel.map((run) => ({
              eventId: scan.eventId,
              runId: run.runId,
              activityId: scan.activityId,
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
