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
}

export interface RegisterWaitInput {
  waitId: string;
  runId: string;
  activityId: string;
  taskIndex: number;
  eventType: string;
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
        .set({ status, closedAt: sql`now()`, updatedAt: sql`now()` })
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
        const rows = await tx
          .select({ waitId: eventWaits.waitId, match: eventWaits.match, triggerEvent: eventWaits.triggerEvent })
          .from(eventWaits)
          .where(
            and(
              eq(eventWaits.eventType, input.eventType),
              eq(eventWaits.status, 'waiting'),
              sql`${eventWaits.registeredAt} < (SELECT ${events.receivedAt} FROM ${events} WHERE ${events.eventId} = ${input.eventId})`,
            ),
          )
          .orderBy(asc(eventWaits.registeredAt), asc(eventWaits.waitId))
          .limit(input.maxWaits + 1);
        if (rows.length === 0) {
          // Nothing was open for it: no record (a later look would find the same), and the log says no scan.
          await tx.delete(eventWaitScans).where(eq(eventWaitScans.eventId, input.eventId));
          return [];
        }
        const capped = rows.length > input.maxWaits;
        const candidates = rows.slice(0, input.maxWaits);
        const decision = input.decide(candidates);
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
              closedAt: sql`now()`,
              updatedAt: sql`now()`,
            })
            .where(and(inArray(eventWaits.waitId, [...details.keys()]), eq(eventWaits.status, 'waiting')))
            .returning();
          matched.sort((a, b) => a.registeredAt.getTime() - b.registeredAt.getTime() || (a.waitId < b.waitId ? -1 : 1));
        }
        await tx
          .update(eventWaitScans)
          .set({ examined: candidates.length, capped, matched: matched.length, errors: decision.errors })
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
