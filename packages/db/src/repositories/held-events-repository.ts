import { sql } from 'drizzle-orm';
import type { Db } from '../client';
import type { Cursor } from '../cursor';
import { activityRuns, eventRoutes, events } from '../schema';

/** Longest route `detail` recorded (the decision log is for people). */
const MAX_DETAIL = 1_000;

/** One held route of an activity with its event's envelope fields, as listed (arrival order). */
export interface HeldEventRow {
  eventId: string;
  eventType: string;
  source: string;
  receivedAt: Date;
  /** The route's decision time: the event's accept, so the arrival order (and the page cursor). */
  createdAt: Date;
  expiresAt: Date;
  workflowId: string;
  detail: string | null;
}

type HeldJson = {
  event_id: string;
  event_type: string;
  source: string;
  received_at: string | Date;
  created_at: string | Date;
  expires_at: string | Date;
  workflow_id: string;
  detail: string | null;
};

function heldFromRow(row: HeldJson): HeldEventRow {
  return {
    eventId: row.event_id,
    eventType: row.event_type,
    source: row.source,
    receivedAt: new Date(row.received_at),
    createdAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
    workflowId: row.workflow_id,
    detail: row.detail,
  };
}

/** What releasing one held route did: `pending` (to be dispatched), `duplicate` (its run is recorded already) or nothing (it was not held). */
export type ReleaseOutcome = 'pending' | 'duplicate' | 'not_held';

/**
 * Held events (docs/recovery.md, "Held events"; ADR 0071): the `held`
 * routes of activities disabled with `when_disabled.action: hold`. Every
 * change is one statement on rows still `held`, so a release, a discard and
 * the expiry sweep racing for one route leave it in exactly one of their
 * outcomes; the others find it no longer held.
 */
export function createHeldEventsRepository(db: Db) {
  // An id holding U+0000 was never stored (Postgres text cannot hold it): it is simply not held, not an error.
  const idsCondition = (eventIds: readonly string[] | undefined) =>
    eventIds === undefined
      ? sql``
      : sql`AND r.event_id IN (SELECT jsonb_array_elements_text(${JSON.stringify(eventIds.filter((id) => !id.includes('\u0000')))}::jsonb))`;

  return {
    /** How many events `activityId` holds now. */
    async count(activityId: string): Promise<number> {
      const result = await db.execute<{ n: number }>(
        sql`SELECT count(*)::int AS n FROM ${eventRoutes} r WHERE r.activity_id = ${activityId} AND r.outcome = 'held'`,
      );
      return result.rows[0]?.n ?? 0;
    },

    /** One page of an activity's held events, oldest first (by arrival: the route was decided at the accept). */
    async list(activityId: string, options: { limit: number; cursor?: Cursor }): Promise<HeldEventRow[]> {
      const after =
        options.cursor === undefined
          ? sql``
          : sql`AND (r.created_at, r.event_id) > (${options.cursor.createdAt.toISOString()}::timestamptz, ${options.cursor.id})`;
      const result = await db.execute<HeldJson>(sql`
        SELECT r.event_id, e.event_type, e.source, e.received_at, r.created_at, r.expires_at, r.workflow_id, r.detail
        FROM ${eventRoutes} r JOIN ${events} e ON e.event_id = r.event_id
        WHERE r.activity_id = ${activityId} AND r.outcome = 'held' ${after}
        ORDER BY r.created_at, r.event_id
        LIMIT ${options.limit}`);
      return result.rows.map(heldFromRow);
    },

    /** The ids of up to `limit` held events of `activityId` (of `eventIds`, when given), oldest first. */
    async next(activityId: string, limit: number, eventIds?: readonly string[]): Promise<string[]> {
      const result = await db.execute<{ event_id: string }>(sql`
        SELECT r.event_id FROM ${eventRoutes} r
        WHERE r.activity_id = ${activityId} AND r.outcome = 'held' ${idsCondition(eventIds)}
        ORDER BY r.created_at, r.event_id
        LIMIT ${limit}`);
      return result.rows.map((row) => row.event_id);
    },

    /**
     * Releases one held route, in one statement: it becomes `pending` on the
     * activity's version `to` (today's: a release runs today's definition),
     * its detail naming the release and the hold, and its event goes back to
     * `pending`, leased for `leaseMs` so the caller dispatches it inline and
     * the dispatcher only if the caller dies first. A route whose run is
     * already recorded becomes `duplicate` at once (nothing to start).
     */
    async release(
      eventId: string,
      activityId: string,
      to: { version: number; name: string },
      note: string,
      leaseMs: number,
    ): Promise<ReleaseOutcome> {
      const result = await db.execute<{ outcome: string | null }>(sql`
        WITH opened AS (
          UPDATE ${eventRoutes} AS r SET
            outcome = CASE WHEN EXISTS (SELECT 1 FROM ${activityRuns} a WHERE a.workflow_id = r.workflow_id) THEN 'duplicate' ELSE 'pending' END,
            activity_version = ${to.version},
            activity_name = ${to.name},
            detail = left(${note} || '; was ' || coalesce(r.detail, 'held'), ${MAX_DETAIL}),
            updated_at = now()
          WHERE r.event_id = ${eventId} AND r.activity_id = ${activityId} AND r.outcome = 'held'
          RETURNING r.outcome
        ), event AS (
          UPDATE ${events} SET routing_state = 'pending', routed_at = NULL,
                 next_attempt_at = now() + make_interval(secs => ${leaseMs / 1000})
          WHERE event_id = ${eventId} AND EXISTS (SELECT 1 FROM opened WHERE outcome = 'pending')
          RETURNING 1
        )
        SELECT (SELECT outcome FROM opened) AS outcome, (SELECT count(*) FROM event) AS events`);
      const outcome = result.rows[0]?.outcome;
      return outcome === 'pending' || outcome === 'duplicate' ? outcome : 'not_held';
    },

    /**
     * Discards the held events of `activityId` (those of `eventIds`, when
     * given): each route becomes `discarded`, its detail naming `note` (who
     * and when) and the hold. Returns the ids discarded.
     */
    async discard(activityId: string, note: string, eventIds?: readonly string[]): Promise<string[]> {
      const result = await db.execute<{ event_id: string }>(sql`
        UPDATE ${eventRoutes} AS r SET
          outcome = 'discarded',
          detail = left(${note} || '; was ' || coalesce(r.detail, 'held'), ${MAX_DETAIL}),
          updated_at = now()
        WHERE r.activity_id = ${activityId} AND r.outcome = 'held' ${idsCondition(eventIds)}
        RETURNING r.event_id`);
      return result.rows.map((row) => row.event_id);
    },

    /**
     * Records up to `limit` held routes whose hold ran out as `expired`
     * (oldest expiry first), skipping rows another sweeper or a release
     * holds. Returns the activity of each route expired.
     */
    async expireDue(limit: number): Promise<string[]> {
      const result = await db.execute<{ activity_id: string }>(sql`
        WITH due AS (
          SELECT r.event_id, r.activity_id FROM ${eventRoutes} r
          WHERE r.outcome = 'held' AND r.expires_at <= now()
          ORDER BY r.expires_at
          LIMIT ${limit}
          FOR UPDATE SKIP LOCKED
        )
        UPDATE ${eventRoutes} AS r SET
          outcome = 'expired',
          detail = left('expired at ' || to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '; was ' || coalesce(r.detail, 'held'), ${MAX_DETAIL}),
          updated_at = now()
        FROM due WHERE r.event_id = due.event_id AND r.activity_id = due.activity_id
        RETURNING r.activity_id`);
      return result.rows.map((row) => row.activity_id);
    },
  };
}

export type HeldEventsRepository = ReturnType<typeof createHeldEventsRepository>;
