/**
 * Dead letters (docs/recovery.md, "Dead letters"; ADR 0072): the routes whose
 * run could not be started — outcome `dead_letter` with a reason, and
 * `filter_error` — that no operator has discarded. Listed, counted for the
 * metrics, retried (the route is opened again on today's definition and the
 * event goes back to pending) and discarded (recorded on the route).
 */
import type { DeadLetterReason, DeadLetterRouteReason } from '@activity-core/contracts';
import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../client';
import { activityRuns, eventRoutes, events } from '../schema';

/** Longest decision-log detail a retry writes. */
const MAX_DETAIL = 2_000;

export interface DeadLetterFilter {
  activityId?: string;
  reason?: DeadLetterReason;
}

/** Keyset position: the dead letter's time, then (event id, activity id). */
export interface DeadLetterCursor {
  at: Date;
  eventId: string;
  activityId: string;
}

export interface DeadLetterRow {
  eventId: string;
  activityId: string;
  activityName: string;
  activityVersion: number;
  eventType: string;
  workflowId: string;
  runId: string;
  reason: DeadLetterReason;
  detail: string | null;
  attempts: number;
  receivedAt: Date;
  deadLetteredAt: Date;
}

/** What a retry decided for the route on today's definitions. */
export type DeadLetterReopen =
  | {
      outcome: 'pending';
      activityVersion: number;
      activityName: string;
      workflowId: string;
      runId: string;
      leaseMs: number;
    }
  | { outcome: 'filtered' | 'filter_error'; activityVersion: number; activityName: string; detail: string }
  | { outcome: 'dead_letter'; reason: DeadLetterRouteReason; detail: string };

interface ListedJson {
  [column: string]: unknown;
  event_id: string;
  activity_id: string;
  activity_name: string;
  activity_version: number;
  event_type: string;
  workflow_id: string;
  run_id: string;
  reason: string;
  detail: string | null;
  attempts: number;
  received_at: string | Date;
  at: string | Date;
}

const OPEN = sql`r.outcome IN ('dead_letter', 'filter_error') AND r.discarded_at IS NULL`;
const REASON = sql`coalesce(r.reason_code, 'filter_error')`;
const AT = sql`coalesce(r.dead_lettered_at, r.created_at)`;

function where(filter: DeadLetterFilter, cursor?: DeadLetterCursor): SQL {
  const conditions: SQL[] = [OPEN];
  if (filter.activityId !== undefined) conditions.push(sql`r.activity_id = ${filter.activityId}::uuid`);
  if (filter.reason !== undefined) conditions.push(sql`${REASON} = ${filter.reason}`);
  if (cursor !== undefined)
    conditions.push(
      sql`(${AT}, r.event_id, r.activity_id) > (${cursor.at.toISOString()}::timestamptz, ${cursor.eventId}, ${cursor.activityId}::uuid)`,
    );
  return sql.join(conditions, sql` AND `);
}

function fromJson(row: ListedJson): DeadLetterRow {
  return {
    eventId: row.event_id,
    activityId: row.activity_id,
    activityName: row.activity_name,
    activityVersion: row.activity_version,
    eventType: row.event_type,
    workflowId: row.workflow_id,
    runId: row.run_id,
    reason: row.reason as DeadLetterReason,
    detail: row.detail,
    attempts: row.attempts,
    receivedAt: new Date(row.received_at),
    deadLetteredAt: new Date(row.at),
  };
}

export function createDeadLettersRepository(db: Db) {
  async function list(
    filter: DeadLetterFilter,
    options: { limit: number; cursor?: DeadLetterCursor },
  ): Promise<DeadLetterRow[]> {
    const result = await db.execute<ListedJson>(sql`
      SELECT r.event_id, r.activity_id, r.activity_name, r.activity_version, e.event_type, r.workflow_id, r.run_id,
             ${REASON} AS reason, r.detail, r.dead_letter_count AS attempts, e.received_at, ${AT} AS at
      FROM ${eventRoutes} r JOIN ${events} e ON e.event_id = r.event_id
      WHERE ${where(filter, options.cursor)}
      ORDER BY ${AT}, r.event_id, r.activity_id
      LIMIT ${options.limit}`);
    return result.rows.map(fromJson);
  }

  return {
    /** Open dead letters (not discarded), oldest first. */
    list,

    /** One route as a dead letter, if it is an open one. */
    async get(eventId: string, activityId: string): Promise<DeadLetterRow | undefined> {
      const result = await db.execute<ListedJson>(sql`
        SELECT r.event_id, r.activity_id, r.activity_name, r.activity_version, e.event_type, r.workflow_id, r.run_id,
               ${REASON} AS reason, r.detail, r.dead_letter_count AS attempts, e.received_at, ${AT} AS at
        FROM ${eventRoutes} r JOIN ${events} e ON e.event_id = r.event_id
        WHERE r.event_id = ${eventId} AND r.activity_id = ${activityId}::uuid AND ${OPEN}`);
      const row = result.rows[0];
      return row === undefined ? undefined : fromJson(row);
    },

    /**
     * Records the discard of these dead letters (those still open): they stay
     * in the decision log with who discarded them and when, and are no longer
     * listed, counted or retried. Returns the ones discarded now.
     */
    async discard(
      keys: readonly { eventId: string; activityId: string }[],
      actor: string,
    ): Promise<{ eventId: string; activityId: string; reason: DeadLetterReason }[]> {
      if (keys.length === 0) return [];
      const values = JSON.stringify(keys.map((key) => ({ event_id: key.eventId, activity_id: key.activityId })));
      const result = await db.execute<{ event_id: string; activity_id: string; reason: string }>(sql`
        UPDATE ${eventRoutes} AS r SET discarded_at = now(), discarded_by = ${actor}, updated_at = now()
        FROM jsonb_to_recordset(${values}::jsonb) AS v(event_id text, activity_id uuid)
        WHERE r.event_id = v.event_id AND r.activity_id = v.activity_id AND ${OPEN}
        RETURNING r.event_id, r.activity_id, ${REASON} AS reason`);
      return result.rows.map((row) => ({
        eventId: row.event_id,
        activityId: row.activity_id,
        reason: row.reason as DeadLetterReason,
      }));
    },

    /**
     * A retry's decision, in one statement, if the route is still an open
     * dead letter (false otherwise: another retry or a discard came first):
     * `pending` opens it on today's version (`duplicate` at once when its run
     * is recorded) and puts the event back to `pending` with its attempts
     * counted from zero, leased for `leaseMs` so the caller dispatches it
     * inline; `filtered` / `filter_error` records what today's filter says;
     * `dead_letter` records the new failure (its count goes up). The note
     * and what the route was are kept in `detail`.
     */
    async reopen(eventId: string, activityId: string, decision: DeadLetterReopen, note: string): Promise<boolean> {
      const was = sql`'; was ' || r.outcome || coalesce(' (' || r.reason_code || ')', '') || coalesce(': ' || r.detail, '')`;
      const key = sql`r.event_id = ${eventId} AND r.activity_id = ${activityId}::uuid AND ${OPEN}`;
      if (decision.outcome === 'pending') {
        const result = await db.execute(sql`
          WITH opened AS (
            UPDATE ${eventRoutes} AS r SET
              outcome = CASE WHEN EXISTS (SELECT 1 FROM ${activityRuns} a WHERE a.workflow_id = ${decision.workflowId})
                             THEN 'duplicate' ELSE 'pending' END,
              reason_code = NULL, activity_version = ${decision.activityVersion}, activity_name = ${decision.activityName},
              workflow_id = ${decision.workflowId}, run_id = ${decision.runId}::uuid,
              detail = left(${note} || ${was}, ${MAX_DETAIL}),
              paced_at = NULL, not_before = NULL, window_id = NULL, updated_at = now()
            WHERE ${key}
            RETURNING r.outcome
          ), event AS (
            UPDATE ${events} SET routing_state = 'pending', routed_at = NULL, routing_attempts = 0, last_error = NULL,
                   next_attempt_at = now() + make_interval(secs => ${decision.leaseMs / 1000})
            WHERE event_id = ${eventId} AND EXISTS (SELECT 1 FROM opened WHERE outcome = 'pending')
          )
          SELECT count(*)::int AS n FROM opened`);
        return Number((result.rows[0] as { n: number } | undefined)?.n ?? 0) > 0;
      }
      const set =
        decision.outcome === 'dead_letter'
          ? sql`outcome = 'dead_letter', reason_code = ${decision.reason}, dead_letter_count = r.dead_letter_count + 1,
                dead_lettered_at = now(), detail = left(${decision.detail} || '; ' || ${note} || ${was}, ${MAX_DETAIL})`
          : sql`outcome = ${decision.outcome}, reason_code = NULL, activity_version = ${decision.activityVersion},
                activity_name = ${decision.activityName},
                detail = left(${decision.detail} || '; ' || ${note} || ${was}, ${MAX_DETAIL})`;
      const result = await db.execute(sql`
        UPDATE ${eventRoutes} AS r SET ${set}, updated_at = now() WHERE ${key}`);
      return (result.rowCount ?? 0) > 0;
    },
  };
}

export type DeadLettersRepository = ReturnType<typeof createDeadLettersRepository>;
