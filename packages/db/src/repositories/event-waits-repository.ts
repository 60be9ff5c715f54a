import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import type { Db } from '../client';
import { eventWaits, eventWaitScans, events } from '../schema';

export type EventWaitRow = typeof eventWaits.$inferSelect;
export type EventWaitScanRow = typeof eventWaitScans.$inferSelect;

/** How a wait ended, or that it has not. */
export type EventWaitStatus = 'waiting' | 'matched' | 'timed_out' | 'cancelled';

/** An open wait a scanning event is matched against. */
export interface WaitCandidate {
  waitId: string;
  match: string | null;
  triggerEvent: unknown;
}

/** What a scan decided: the waits the event matched (with why) and how many evaluations failed. */
export interface WaitScanDecision {
  matched: { waitId: string; detail: string }[];
  errors: number;
  /**
   * How many of the candidates, in order, were examined; fewer than given when
   * the scan's evaluation budget ran out (the rest are left waiting, and the
   * scan is recorded as capped). Absent: all of them.
   */
  examined?: number;
}

/** Open waits read (and decided) at a time, so one scan never holds more than this many trigger events in memory. */
const SCAN_PAGE_SIZE = 100;

export interface RegisterWaitInput {
  waitId: string;
  runId: string;
  activityId: string;
  taskIndex: number;
  eventType: string;
  /** The only sources whose events may end the wait; absent: any source. */
  sources?: readonly string[];
  match?: string;
  triggerEvent?: unknown;
  timeoutMs: number;
}

/** A wait as its task workflow needs it: how it stands, and the matched event's envelope when it matched. */
export interface WaitState {
  status: EventWaitStatus;
  matchedEventId: string | null;
  /** The matched event's envelope (null when not matched, or when retention forgot the event). */
  matchedEvent: unknown;
}

export function createEventWaitsRepository(db: Db) {
  async function stateOf(waitId: string): Promise<WaitState | undefined> {
    const [row] = await db
      .select({ status: eventWaits.status, matchedEventId: eventWaits.matchedEventId, payload: events.payload })
      .from(eventWaits)
      .leftJoin(events, eq(events.eventId, eventWaits.matchedEventId))
      .where(eq(eventWaits.waitId, waitId));
    if (row === undefined) return undefined;
    return {
      status: row.status as EventWaitStatus,
      matchedEventId: row.matchedEventId,
      matchedEvent: row.payload ?? null,
    };
  }

  return {
    /**
     * Records that a task began waiting (idempotent on the wait id: a retried
     * or replayed registration finds the row as it stands, possibly already
     * matched) and returns its state.
     */
    async register(input: RegisterWaitInput): Promise<WaitState> {
      await db
        .insert(eventWaits)
        .values({
          waitId: input.waitId,
          runId: input.runId,
          activityId: input.activityId,
          taskIndex: input.taskIndex,
          eventType: input.eventType,
          sources: input.sources === undefined ? null : [...input.sources],
          match: input.match ?? null,
          triggerEvent: input.triggerEvent ?? null,
          expiresAt: sql`now() + make_interval(secs => ${input.timeoutMs / 1000}::double precision)`,
        })
        .onConflictDoNothing();
      const state = await stateOf(input.waitId);
      if (state === undefined) throw new Error(`wait ${input.waitId} was registered but cannot be read`);
      return state;
    },

    /**
     * Ends a wait that is still waiting (`timed_out` or `cancelled`). A wait
     * an event matched first stays matched: the answer then says so, with the
     * event, and the task takes the event rather than the timeout.
     */
    async close(waitId: string, status: 'timed_out' | 'cancelled'): Promise<WaitState> {
      await db
        .update(eventWaits)
        .set({ status, triggerEvent: null, closedAt: sql`now()`, updatedAt: sql`now()` })
        .where(and(eq(eventWaits.waitId, waitId), eq(eventWaits.status, 'waiting')));
      // A wait never registered (cancelled before its registration ran) has nothing to close.
      return (await stateOf(waitId)) ?? { status, matchedEventId: null, matchedEvent: null };
    },

    /** Whether this event has made its scan, and its matches whose signal Temporal has not taken yet. */
    async state(eventId: string): Promise<{ scanned: boolean; pending: EventWaitRow[] }> {
      const [scans, pending] = await Promise.all([
        db.select({ eventId: eventWaitScans.eventId }).from(eventWaitScans).where(eq(eventWaitScans.eventId, eventId)),
        db
          .select()
          .from(eventWaits)
          .where(and(eq(eventWaits.matchedEventId, eventId), eq(eventWaits.signalState, 'pending')))
          .orderBy(asc(eventWaits.registeredAt), asc(eventWaits.waitId)),
      ]);
      return { scanned: scans.length > 0, pending };
    },

    /**
     * The event's one look at the waits open for its type: at most `maxWaits`
     * of those registered before the event was accepted (oldest first), a
     * decision by `decide`, and the matches recorded in one transaction — each
     * wait still waiting becomes `matched` by this event with its signal
     * `pending`. A wait another event matched meanwhile stays that event's.
     * Returns the waits this event matched, or undefined when the event had
     * already made its scan (a redelivery, a retry, a concurrent dispatcher).
     * A look that finds no open wait leaves no record.
     */
    async scan(input: {
      eventId: string;
      eventType: string;
      /** The event's source: a wait naming other sources is not a candidate. */
      source: string;
      maxWaits: number;
      decide: (candidates: readonly WaitCandidate[]) => WaitScanDecision;
    }): Promise<EventWaitRow[] | undefined> {
      return await db.transaction(async (tx) => {
        // The marker first: a concurrent scan of the same event waits here, then finds it taken.
        const [marker] = await tx
          .insert(eventWaitScans)
          .values({ eventId: input.eventId, examined: 0, capped: false, matched: 0, errors: 0 })
          .onConflictDoNothing()
          .returning({ eventId: eventWaitScans.eventId });
        if (marker === undefined) return undefined;
        // Pages of open waits, oldest first, each decided before the next is read: a page's trigger
        // events (each up to the event size limit) are all one scan holds in memory at once.
        const decided: WaitScanDecision = { matched: [], errors: 0 };
        let examined = 0;
        let capped = false;
        let after: { registeredAt: Date; waitId: string } | undefined;
        for (;;) {
          const want = Math.min(SCAN_PAGE_SIZE, input.maxWaits - examined);
          const rows = await tx
            .select({
              waitId: eventWaits.waitId,
              match: eventWaits.match,
              triggerEvent: eventWaits.triggerEvent,
              registeredAt: eventWaits.registeredAt,
            })
            .from(eventWaits)
            .where(
              and(
                eq(eventWaits.eventType, input.eventType),
                eq(eventWaits.status, 'waiting'),
                sql`(${eventWaits.sources} IS NULL OR ${input.source}::text = ANY(${eventWaits.sources}))`,
                // Registered before the event was accepted, and not yet expired when it was: an event after the
                // timeout never ends the wait, even if its task has not closed the row yet (no worker ran, or the
                // workflow was terminated and never will).
                sql`(SELECT ${events.receivedAt} FROM ${events} WHERE ${events.eventId} = ${input.eventId}) > ${eventWaits.registeredAt}`,
                sql`(SELECT ${events.receivedAt} FROM ${events} WHERE ${events.eventId} = ${input.eventId}) < ${eventWaits.expiresAt}`,
                after === undefined
                  ? undefined
                  : sql`(${eventWaits.registeredAt}, ${eventWaits.waitId}) > (${after.registeredAt.toISOString()}::timestamptz, ${after.waitId}::text)`,
              ),
            )
            .orderBy(asc(eventWaits.registeredAt), asc(eventWaits.waitId))
            .limit(want + 1);
          if (rows.length === 0 && examined === 0) {
            // Nothing was open for it: no record (a later look would find the same), and the log says no scan.
            await tx.delete(eventWaitScans).where(eq(eventWaitScans.eventId, input.eventId));
            return [];
          }
          if (want === 0) {
            // At the most waits one event is matched against: the rest keep waiting for a later event.
            capped = rows.length > 0;
            break;
          }
          const candidates = rows.slice(0, want);
          const decision = input.decide(
            candidates.map(({ waitId, match, triggerEvent }) => ({ waitId, match, triggerEvent })),
          );
          decided.matched.push(...decision.matched);
          decided.errors += decision.errors;
          const looked = decision.examined ?? candidates.length;
          examined += looked;
          if (looked < candidates.length) {
            // The scan's evaluation budget ran out: the rest keep waiting for a later event.
            capped = true;
            break;
          }
          if (rows.length <= want) break;
          const last = candidates[candidates.length - 1]!;
          after = { registeredAt: last.registeredAt, waitId: last.waitId };
        }
        const decision = decided;
        let matched: EventWaitRow[] = [];
        if (decision.matched.length > 0) {
          const details = new Map(decision.matched.map((entry) => [entry.waitId, entry.detail]));
          const detailCase = sql.join(
            [
              sql`CASE ${eventWaits.waitId}`,
              ...decision.matched.map((entry) => sql`WHEN ${entry.waitId} THEN ${entry.detail}`),
              sql`END`,
            ],
            sql` `,
          );
          matched = await tx
            .update(eventWaits)
            .set({
              status: 'matched',
              matchedEventId: input.eventId,
              signalState: 'pending',
              detail: detailCase,
              // Only an open wait's match reads it: a closed wait keeps no copy of its run's trigger event.
              triggerEvent: null,
              closedAt: sql`now()`,
              updatedAt: sql`now()`,
            })
            .where(and(inArray(eventWaits.waitId, [...details.keys()]), eq(eventWaits.status, 'waiting')))
            .returning();
          matched.sort((a, b) => a.registeredAt.getTime() - b.registeredAt.getTime() || (a.waitId < b.waitId ? -1 : 1));
        }
        await tx
          .update(eventWaitScans)
          .set({ examined, capped, matched: matched.length, errors: decision.errors })
          .where(eq(eventWaitScans.eventId, input.eventId));
        return matched;
      });
    },

    /** Records Temporal's answer to the signal that resumes a matched wait's task. */
    async settleSignal(waitId: string, outcome: 'delivered' | 'already_closed'): Promise<void> {
      await db
        .update(eventWaits)
        .set({ signalState: outcome, updatedAt: sql`now()` })
        .where(and(eq(eventWaits.waitId, waitId), eq(eventWaits.signalState, 'pending')));
    },

    /** The event's wait record: its scan and every wait it matched. */
    async listForEvent(eventId: string): Promise<{ scan: EventWaitScanRow | undefined; waits: EventWaitRow[] }> {
      const [scans, waits] = await Promise.all([
        db.select().from(eventWaitScans).where(eq(eventWaitScans.eventId, eventId)),
        db
          .select()
          .from(eventWaits)
          .where(eq(eventWaits.matchedEventId, eventId))
          .orderBy(asc(eventWaits.registeredAt), asc(eventWaits.waitId)),
      ]);
      return { scan: scans[0], waits };
    },

    /** The waits of one run's tasks, by task index. */
    async listForRun(runId: string): Promise<EventWaitRow[]> {
      return await db.select().from(eventWaits).where(eq(eventWaits.runId, runId)).orderBy(asc(eventWaits.taskIndex));
    },
  };
}

export type EventWaitsRepository = ReturnType<typeof createEventWaitsRepository>;
