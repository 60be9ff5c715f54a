import type { BulkReplayOutcome } from '@activity-core/contracts';
import { and, asc, eq, gt, gte, lt, or, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../client';
import { activityRuns, bulkReplays, eventReplays, eventRoutes, events } from '../schema';
import type { EventRow } from './events-repository';

export type EventReplayRow = typeof eventReplays.$inferSelect;
export type BulkReplayRow = typeof bulkReplays.$inferSelect;

/** The events a bulk replay selects (by `received_at`). */
export interface ReplaySelection {
  /** An exact type, or `prefix.*`. */
  eventType?: string;
  source?: string;
  outcome: BulkReplayOutcome;
  from: Date;
  to: Date;
}

export interface ReplayCursor {
  receivedAt: Date;
  eventId: string;
}

/** A route a replay decided on today's definitions, to be (re)opened for a run. */
export interface ReplayRoute {
  activityId: string;
  activityVersion: number;
  activityName: string;
  workflowId: string;
  runId: string;
}

/** Longest decision-log detail a replay writes. */
const MAX_DETAIL = 1_000;

function likePrefix(pattern: string): string {
  return `${pattern.slice(0, -1).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

function selectionWhere(selection: ReplaySelection, cursor?: ReplayCursor): SQL {
  const conditions: SQL[] = [gte(events.receivedAt, selection.from), lt(events.receivedAt, selection.to)];
  if (selection.eventType !== undefined) {
    conditions.push(
      selection.eventType.endsWith('.*')
        ? sql`${events.eventType} LIKE ${likePrefix(selection.eventType)}`
        : eq(events.eventType, selection.eventType),
    );
  }
  if (selection.source !== undefined) conditions.push(eq(events.source, selection.source));
  const routeWith = (outcomes: string[]) =>
    sql`EXISTS (SELECT 1 FROM ${eventRoutes} r WHERE r.event_id = ${events.eventId} AND r.outcome IN (${sql.join(
      outcomes.map((o) => sql`${o}`),
      sql`, `,
    )}))`;
  switch (selection.outcome) {
    case 'unmatched':
      conditions.push(sql`NOT ${routeWith(['pending', 'started', 'duplicate', 'coalescing', 'merged', 'batched'])}`);
      break;
    case 'filtered':
      conditions.push(routeWith(['filtered', 'filter_error']));
      break;
    case 'pending':
      conditions.push(routeWith(['pending']));
      break;
    case 'any':
      break;
  }
  if (cursor !== undefined) {
    conditions.push(
      or(
        gt(events.receivedAt, cursor.receivedAt),
        and(eq(events.receivedAt, cursor.receivedAt), gt(events.eventId, cursor.eventId)),
      )!,
    );
  }
  return and(...conditions)!;
}

export function createReplaysRepository(db: Db) {
  return {
    /**
     * Opens the routes a replay (`if_no_runs`) decided, in one statement: a
     * route the event never had is inserted `pending`; a route a filter
     * stopped (`filtered`, `filter_error`) or a rate limit dropped (`dropped`;
     * its pacing decision is cleared, so today's limits decide again), held while its activity was
     * disabled (`held`: the replay releases it), or that is a dead letter (`dead_letter`, its reason
     * cleared; discarded or not) becomes `pending` on today's version, its detail naming the replay and what it was; a route that
     * already leads to a run is left alone. A route whose run is already
     * recorded is stored `duplicate` at once. When a route was opened the
     * event goes back to `pending` (leased for `leaseMs`, so the caller
     * dispatches it inline and the dispatcher only after a crash). Answers
     * every route of the event afterwards.
     */
    async openRoutes(
      eventId: string,
      routes: readonly ReplayRoute[],
      note: string,
      leaseMs: number,
    ): Promise<(typeof eventRoutes.$inferSelect)[]> {
      if (routes.length > 0) {
        const values = JSON.stringify(
          routes.map((r) => ({
            activity_id: r.activityId,
            activity_version: r.activityVersion,
            activity_name: r.activityName,
            workflow_id: r.workflowId,
            run_id: r.runId,
          })),
        );
        await db.execute(sql`
          WITH v AS (
            SELECT * FROM jsonb_to_recordset(${values}::jsonb)
              AS v(activity_id uuid, activity_version integer, activity_name text, workflow_id text, run_id uuid)
          ), opened AS (
            INSERT INTO ${eventRoutes} AS er (event_id, activity_id, activity_version, activity_name, workflow_id, run_id, outcome, detail)
            SELECT ${eventId}, v.activity_id, v.activity_version, v.activity_name, v.workflow_id, v.run_id,
                   CASE WHEN EXISTS (SELECT 1 FROM ${activityRuns} r WHERE r.workflow_id = v.workflow_id) THEN 'duplicate' ELSE 'pending' END,
                   left(${note}, ${MAX_DETAIL})
            FROM v
            ON CONFLICT (event_id, activity_id) DO UPDATE SET
              activity_version = excluded.activity_version,
              activity_name = excluded.activity_name,
              outcome = excluded.outcome,
              detail = left(excluded.detail || '; was ' || er.outcome || coalesce(': ' || er.detail, ''), ${MAX_DETAIL}),
              paced_at = NULL,
              not_before = NULL,
              reason_code = NULL,
              updated_at = now()
            WHERE er.outcome IN ('filtered', 'filter_error', 'dropped', 'held', 'dead_letter')
            RETURNING er.outcome
          )
          UPDATE ${events} SET routing_state = 'pending', routed_at = NULL,
                 next_attempt_at = now() + make_interval(secs => ${leaseMs / 1000})
          WHERE event_id = ${eventId} AND EXISTS (SELECT 1 FROM opened WHERE outcome = 'pending')`);
      }
      return await db
        .select()
        .from(eventRoutes)
        .where(eq(eventRoutes.eventId, eventId))
        .orderBy(asc(eventRoutes.createdAt), asc(eventRoutes.activityId));
    },

    /**
     * The forced replay of `replayOf` recorded under `key`, allocating the
     * next attempt when there is none: one transaction holding an advisory
     * lock on the original run id, so concurrent requests take attempts one
     * after the other (the unique indexes back this up).
     */
    async allocateForced(
      replayOf: string,
      key: string,
      plan: (attempt: number) => Omit<EventReplayRow, 'replayOf' | 'attempt' | 'requestKey' | 'requestedAt'>,
    ): Promise<{ row: EventReplayRow; created: boolean }> {
      return await db.transaction(async (tx) => {
        await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtext(${`replay:${replayOf}`}))`);
        const [existing] = await tx
          .select()
          .from(eventReplays)
          .where(and(eq(eventReplays.replayOf, replayOf), eq(eventReplays.requestKey, key)));
        if (existing !== undefined) return { row: existing, created: false };
        const [{ last } = { last: 0 }] = await tx
          .select({ last: sql<number>`coalesce(max(${eventReplays.attempt}), 0)::int` })
          .from(eventReplays)
          .where(eq(eventReplays.replayOf, replayOf));
        const attempt = last + 1;
        const [row] = await tx
          .insert(eventReplays)
          .values({ ...plan(attempt), replayOf, attempt, requestKey: key })
          .returning();
        return { row: row!, created: true };
      });
    },

    /** Every forced replay of an event, oldest first, with the status its run recorded (`pending` until it has). */
    async listForEvent(eventId: string): Promise<(EventReplayRow & { status: string })[]> {
      const rows = await db
        .select({ replay: eventReplays, status: activityRuns.status })
        .from(eventReplays)
        .leftJoin(activityRuns, eq(activityRuns.runId, eventReplays.runId))
        .where(eq(eventReplays.eventId, eventId))
        .orderBy(asc(eventReplays.requestedAt), asc(eventReplays.attempt));
      return rows.map(({ replay, status }) => ({ ...replay, status: status ?? 'pending' }));
    },

    /** How many events the selection holds, counted up to `atMost` (a selection of millions is not counted whole). */
    async countSelection(selection: ReplaySelection, atMost: number): Promise<number> {
      const result = await db.execute(
        sql`SELECT count(*)::int AS n FROM (SELECT 1 FROM ${events} WHERE ${selectionWhere(selection)} LIMIT ${atMost}) s`,
      );
      return (result.rows[0] as { n: number } | undefined)?.n ?? 0;
    },

    /** The next page of a selection, in arrival order (`received_at`, then `event_id`). */
    async pageSelection(
      selection: ReplaySelection,
      cursor: ReplayCursor | undefined,
      limit: number,
    ): Promise<EventRow[]> {
      return await db
        .select()
        .from(events)
        .where(selectionWhere(selection, cursor))
        .orderBy(asc(events.receivedAt), asc(events.eventId))
        .limit(limit);
    },

    /** Inserts the record unless one with this id exists; answers the stored one either way. */
    async createBulk(record: {
      id: string;
      filter: unknown;
      mode: string;
      total: number;
      requestedBy: string | null;
    }): Promise<{ row: BulkReplayRow; created: boolean }> {
      const inserted = await db
        .insert(bulkReplays)
        .values({
          ...record,
          status: record.total === 0 ? 'completed' : 'running',
          ...(record.total === 0 ? { completedAt: sql`now()` } : {}),
        })
        .onConflictDoNothing({ target: bulkReplays.id })
        .returning();
      if (inserted[0] !== undefined) return { row: inserted[0], created: true };
      const [row] = await db.select().from(bulkReplays).where(eq(bulkReplays.id, record.id));
      return { row: row!, created: false };
    },

    async getBulk(id: string): Promise<BulkReplayRow | undefined> {
      const [row] = await db.select().from(bulkReplays).where(eq(bulkReplays.id, id));
      return row;
    },

    /** Takes the lease of one running bulk replay whose lease is free or lapsed, oldest first (SKIP LOCKED). */
    async claimBulk(owner: string, leaseMs: number): Promise<BulkReplayRow | undefined> {
      const result = await db.execute(sql`
        UPDATE ${bulkReplays} SET lease_owner = ${owner}, lease_until = now() + make_interval(secs => ${leaseMs / 1000}), updated_at = now()
        WHERE id = (
          SELECT id FROM ${bulkReplays}
          WHERE status = 'running' AND (lease_until IS NULL OR lease_until < now())
          ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED
        )
        RETURNING id`);
      const id = (result.rows[0] as { id?: string } | undefined)?.id;
      return id === undefined ? undefined : await this.getBulk(id);
    },

    /** Records one finished page (cursor and counters) while `owner` holds the lease; false when it lost it. */
    async recordPage(
      id: string,
      owner: string,
      leaseMs: number,
      progress: {
        cursor: ReplayCursor | undefined;
        processed: number;
        started: number;
        skipped: number;
        skippedReasons: Record<string, number>;
        done: boolean;
      },
    ): Promise<boolean> {
      const rows = await db
        .update(bulkReplays)
        .set({
          cursorReceivedAt: progress.cursor?.receivedAt ?? null,
          cursorEventId: progress.cursor?.eventId ?? null,
          processed: progress.processed,
          started: progress.started,
          skipped: progress.skipped,
          skippedReasons: progress.skippedReasons,
          updatedAt: sql`now()`,
          leaseUntil: progress.done ? null : sql`now() + make_interval(secs => ${leaseMs / 1000})`,
          ...(progress.done ? { status: 'completed', completedAt: sql`now()`, leaseOwner: null } : {}),
        })
        .where(and(eq(bulkReplays.id, id), eq(bulkReplays.leaseOwner, owner), eq(bulkReplays.status, 'running')))
        .returning({ id: bulkReplays.id });
      return rows.length > 0;
    },

    /** Gives the lease back (graceful shutdown or an interruption), so another process resumes at once. */
    async releaseBulk(id: string, owner: string): Promise<void> {
      await db
        .update(bulkReplays)
        .set({ leaseUntil: null, leaseOwner: null })
        .where(and(eq(bulkReplays.id, id), eq(bulkReplays.leaseOwner, owner)));
    },
  };
}

export type ReplaysRepository = ReturnType<typeof createReplaysRepository>;
