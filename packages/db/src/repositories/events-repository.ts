import type {
  DeadLetterRouteReason,
  EventEnvelope,
  EventIdOrigin,
  FilteredRouteOutcome,
} from '@activity-core/contracts';
import { and, asc, eq, lte, sql } from 'drizzle-orm';
import type { Db } from '../client';
import { answeredWithError } from '../errors';
import { createStatementRunner, type StatementRunner } from '../statements';
import { activityRuns, definitionsVersion, eventRoutes, events, eventWaits, webhookSourcesVersion } from '../schema';

export type EventRow = typeof events.$inferSelect;
export type EventRouteRow = typeof eventRoutes.$inferSelect;

export interface NewRoute {
  activityId: string;
  activityVersion: number;
  activityName: string;
  workflowId: string;
  runId: string;
  /** `pending` (a run is due) unless a filter stopped the event, or its disabled activity holds it (`held`). @default 'pending' */
  outcome?: 'pending' | FilteredRouteOutcome | 'held';
  /** Why a filter stopped the event, or until when it is held. */
  detail?: string;
  /** A `held` route's end of hold (docs/recovery.md, "Held events"). */
  expiresAt?: Date;
}

export type AcceptResult =
  | {
      kind: 'accepted';
      event: EventRow;
      routes: EventRouteRow[];
      /** Some `wait_for_event` task was waiting for an event of this type when it was accepted: it is stored pending. Absent: false. */
      waitsOpen?: boolean;
    }
  | { kind: 'duplicate'; event: EventRow; routes: EventRouteRow[] }
  | { kind: 'fingerprint_mismatch'; event: EventRow }
  /**
   * Nothing was stored: the definitions changed since the version the
   * routes were decided at (`definitionsVersion`). Decide again on the
   * definitions as of `version` and accept again.
   */
  | { kind: 'stale_definitions'; version: bigint | undefined }
  /**
   * Nothing was stored and nothing answered: the webhook sources changed
   * since the version the caller checked the event's source against
   * (`webhookSourcesVersion`). Check it again on the sources as they are now
   * and accept again.
   */
  | { kind: 'stale_webhook_sources' };

/** Temporal's answer for one route, as `settle` records it. */
export type RouteSettlement =
  | {
      activityId: string;
      /** `coalescing`: the route opened a debounce window whose workflow Temporal has now (docs/coalescing.md). */
      outcome: 'started' | 'duplicate' | 'coalescing';
    }
  | {
      activityId: string;
      /** The run cannot be started and is not retried on its own (docs/recovery.md, "Dead letters"). */
      outcome: 'dead_letter';
      reason: DeadLetterRouteReason;
      /** What failed. */
      detail: string;
    };

/** Longest `detail` stored on a route. */
const MAX_ROUTE_DETAIL = 2000;

/** A row of `events` as `to_jsonb` gives it: snake_case keys, timestamps as ISO strings. */
type EventJson = {
  event_id: string;
  source: string;
  event_type: string;
  subject: string | null;
  occurred_at: string;
  payload: unknown;
  fingerprint: string;
  id_origin: string;
  received_at: string;
  routing_state: string;
  routing_attempts: number;
  next_attempt_at: string;
  routed_at: string | null;
  last_error: string | null;
  credential: string | null;
  hops: number;
  payload_expired_at?: string | null;
};
type RouteJson = {
  event_id: string;
  activity_id: string;
  activity_version: number;
  activity_name: string;
  workflow_id: string;
  run_id: string;
  outcome: string;
  detail: string | null;
  paced_at: string | null;
  not_before: string | null;
  window_id?: string | null;
  window_position?: number | null;
  expires_at?: string | null;
  reason_code?: string | null;
  dead_letter_count?: number;
  dead_lettered_at?: string | null;
  discarded_at?: string | null;
  discarded_by?: string | null;
  created_at: string;
  updated_at: string;
};

function eventFromJson(row: EventJson): EventRow {
  return {
    eventId: row.event_id,
    source: row.source,
    eventType: row.event_type,
    subject: row.subject,
    occurredAt: new Date(row.occurred_at),
    payload: row.payload,
    fingerprint: row.fingerprint,
    idOrigin: row.id_origin,
    receivedAt: new Date(row.received_at),
    routingState: row.routing_state,
    routingAttempts: row.routing_attempts,
    nextAttemptAt: new Date(row.next_attempt_at),
    routedAt: row.routed_at === null ? null : new Date(row.routed_at),
    lastError: row.last_error,
    credential: row.credential,
    hops: row.hops,
    payloadExpiredAt: row.payload_expired_at == null ? null : new Date(row.payload_expired_at),
  };
}

function routeFromJson(row: RouteJson): EventRouteRow {
  return {
    eventId: row.event_id,
    activityId: row.activity_id,
    activityVersion: row.activity_version,
    activityName: row.activity_name,
    workflowId: row.workflow_id,
    runId: row.run_id,
    outcome: row.outcome,
    detail: row.detail,
    pacedAt: row.paced_at === null ? null : new Date(row.paced_at),
    notBefore: row.not_before === null ? null : new Date(row.not_before),
    windowId: row.window_id ?? null,
    windowPosition: row.window_position ?? null,
    expiresAt: row.expires_at === undefined || row.expires_at === null ? null : new Date(row.expires_at),
    reasonCode: row.reason_code ?? null,
    deadLetterCount: row.dead_letter_count ?? 0,
    deadLetteredAt: row.dead_lettered_at == null ? null : new Date(row.dead_lettered_at),
    discardedAt: row.discarded_at == null ? null : new Date(row.discarded_at),
    discardedBy: row.discarded_by ?? null,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

/** Stored routes in the order they were decided (the order `accept` was given them). */
function byDecisionOrder(routes: EventRouteRow[], decided: readonly NewRoute[]): EventRouteRow[] {
  const position = new Map(decided.map((route, index) => [route.activityId, index]));
  return routes.sort((a, b) => (position.get(a.activityId) ?? 0) - (position.get(b.activityId) ?? 0));
}

/**
 * Most events one accept statement stores. Accepts asked for in the same
 * turn of the event loop share a statement (and a commit); a busy API has
 * tens of them at once, an idle one only ever sends groups of one.
 */
const ACCEPT_GROUP_MAX = 32;

/** One event of an accept statement's group, as the statement reads it (`jsonb_to_recordset`). */
interface AcceptItem {
  event_id: string;
  source: string;
  event_type: string;
  subject: string | null;
  occurred_at: string;
  payload: EventEnvelope;
  fingerprint: string;
  id_origin: EventIdOrigin;
  credential: string | null;
  hops: number;
  /** No route needs Temporal: stored routed unless a wait is open. */
  settled: boolean;
  lease_seconds: number;
  /** The definitions' change counter (decimal), or null: unchecked. */
  expected: string | null;
  /** The webhook sources' change counter (decimal), or null: unchecked. */
  expected_sources: string | null;
  routes: ReadonlyArray<Record<string, unknown>>;
}

/** What the accept statement answers for one item. */
interface AcceptRow {
  [column: string]: unknown;
  ord: number;
  stamp: string | null;
  sources_current: boolean;
  waits_open: boolean;
  inserted: EventJson | null;
  inserted_routes: RouteJson[];
  existing: EventJson | null;
  existing_routes: RouteJson[];
}

interface AcceptEntry {
  item: AcceptItem;
  resolve: (row: AcceptRow) => void;
  reject: (error: unknown) => void;
}

/**
 * `statements`: how the accept runs (named and planned once per connection,
 * see createStatementRunner); unnamed when absent.
 */
export function createEventsRepository(db: Db, options: { statements?: StatementRunner } = {}) {
  const statements = options.statements ?? createStatementRunner(db, { prepared: false });

  /**
   * The accept statement (see `accept`): a group of events, each with its
   * own checks and routes, in one statement and one commit. Its one value
   * is the group as a JSON array (placeholder `items`), so a call only binds
   * it. Rows are inserted in `event_id` order, so two groups that share ids
   * take their locks in the same order and cannot deadlock; a group never
   * holds one id twice (see `accept`). One result row per item, by `ord`.
   */
  const acceptStatement = statements.statement<AcceptRow>(
    'events_accept',
    sql`
      WITH item AS (
        SELECT * FROM jsonb_to_recordset(${sql.placeholder('items')}::jsonb) AS i(
          ord integer, event_id text, source text, event_type text, subject text, occurred_at timestamptz,
          payload jsonb, fingerprint text, id_origin text, credential text, hops integer, settled boolean,
          lease_seconds double precision, expected bigint, expected_sources bigint, routes jsonb)
      ), stamp AS (
        SELECT ${definitionsVersion.version} AS version FROM ${definitionsVersion} WHERE ${definitionsVersion.id} = 1
      ), sources AS (
        SELECT ${webhookSourcesVersion.version} AS version FROM ${webhookSourcesVersion} WHERE ${webhookSourcesVersion.id} = 1
      ), checked AS (
        SELECT i.*,
               i.expected_sources IS NULL OR coalesce((SELECT version FROM sources) = i.expected_sources, false) AS sources_current,
               i.expected IS NULL OR coalesce((SELECT version FROM stamp) = i.expected, false) AS definitions_current,
               EXISTS (
                 SELECT 1 FROM ${eventWaits} w WHERE w.event_type = i.event_type AND w.status = 'waiting' AND w.expires_at > now()
               ) AS waits_open
        FROM item i
      ), new_event AS (
        INSERT INTO ${events} (event_id, source, event_type, subject, occurred_at, payload, fingerprint, id_origin, credential, hops, routing_state, routed_at, next_attempt_at)
        SELECT c.event_id, c.source, c.event_type, c.subject, c.occurred_at, c.payload, c.fingerprint, c.id_origin, c.credential, c.hops,
               CASE WHEN c.settled AND NOT c.waits_open THEN 'routed' ELSE 'pending' END,
               CASE WHEN c.settled AND NOT c.waits_open THEN now() END,
               now() + make_interval(secs => c.lease_seconds)
        FROM checked c
        WHERE c.definitions_current AND c.sources_current
        ORDER BY c.event_id
        ON CONFLICT (event_id) DO NOTHING
        RETURNING *
      ), new_routes AS (
        INSERT INTO ${eventRoutes} (event_id, activity_id, activity_version, activity_name, workflow_id, run_id, outcome, detail, expires_at)
        SELECT n.event_id, v.activity_id, v.activity_version, v.activity_name, v.workflow_id, v.run_id,
               CASE WHEN v.outcome = 'pending' AND EXISTS (SELECT 1 FROM ${activityRuns} r WHERE r.workflow_id = v.workflow_id) THEN 'duplicate' ELSE v.outcome END,
               v.detail, v.expires_at
        FROM new_event n
        JOIN item i ON i.event_id = n.event_id
        CROSS JOIN LATERAL jsonb_to_recordset(i.routes)
             AS v(activity_id uuid, activity_version integer, activity_name text, workflow_id text, run_id uuid, outcome text, detail text, expires_at timestamptz)
        RETURNING *
      )
      SELECT c.ord,
             (SELECT version FROM stamp)::text AS stamp,
             c.sources_current,
             c.waits_open,
             (SELECT to_jsonb(n) FROM new_event n WHERE n.event_id = c.event_id) AS inserted,
             (SELECT coalesce(jsonb_agg(to_jsonb(r)), '[]'::jsonb) FROM new_routes r WHERE r.event_id = c.event_id) AS inserted_routes,
             (SELECT to_jsonb(e) FROM ${events} e
               WHERE e.event_id = c.event_id AND NOT EXISTS (SELECT 1 FROM new_event n WHERE n.event_id = c.event_id)) AS existing,
             (SELECT coalesce(jsonb_agg(to_jsonb(r) ORDER BY r.created_at, r.activity_id), '[]'::jsonb) FROM ${eventRoutes} r
               WHERE r.event_id = c.event_id AND NOT EXISTS (SELECT 1 FROM new_event n WHERE n.event_id = c.event_id)) AS existing_routes
      FROM checked c
      ORDER BY c.ord`,
  );

  /**
   * Accepts waiting for their statement: everything asked for in one turn
   * of the event loop goes out together, in groups of at most
   * ACCEPT_GROUP_MAX with distinct event ids.
   */
  let waiting: AcceptEntry[] = [];
  let flushScheduled = false;

  function enqueue(item: AcceptItem): Promise<AcceptRow> {
    return new Promise<AcceptRow>((resolve, reject) => {
      waiting.push({ item, resolve, reject });
      if (!flushScheduled) {
        flushScheduled = true;
        setImmediate(flush);
      }
    });
  }

  function flush(): void {
    flushScheduled = false;
    while (waiting.length > 0) {
      const group: AcceptEntry[] = [];
      const later: AcceptEntry[] = [];
      const ids = new Set<string>();
      for (const entry of waiting) {
        // One statement never holds an id twice: a second delivery goes in another group, whose insert waits for
        // this one's commit and answers it as a duplicate (or the other way round: the groups run side by side).
        if (group.length < ACCEPT_GROUP_MAX && !ids.has(entry.item.event_id)) {
          ids.add(entry.item.event_id);
          group.push(entry);
        } else later.push(entry);
      }
      waiting = later;
      void runGroup(group);
    }
  }

  async function runGroup(group: readonly AcceptEntry[]): Promise<void> {
    let rows: AcceptRow[];
    try {
      const items = group.map((entry, ord) => ({ ...entry.item, ord }));
      rows = (await acceptStatement({ items: JSON.stringify(items) })).rows;
    } catch (error) {
      // Postgres answered with an error (a value it refused, a lock or statement timeout on one event's row):
      // the statement rolled back and nothing of it is stored, so every event runs again alone and only the
      // one at fault fails. A connection lost without an answer may have committed the group: that is every
      // event's own answer, as it would have been alone.
      if (group.length > 1 && answeredWithError(error)) {
        for (const entry of group) void runGroup([entry]);
        return;
      }
      for (const entry of group) entry.reject(error);
      return;
    }
    for (const [ord, entry] of group.entries()) {
      const row = rows[ord];
      if (row?.ord === ord) entry.resolve(row);
      else entry.reject(new Error(`accepting event ${entry.item.event_id} returned no row of its own`));
    }
  }

  /**
   * The routing record (see `settle`), one per variant: `failed` records the
   * failure and the retry time, otherwise the event is marked routed when no
   * route is left pending. The CTE's update is not visible to the rest of the
   * statement: routes it settles are excluded from the pending check by id.
   */
  function buildSettleStatement(failed: boolean) {
    const p = (name: string) => sql.placeholder(name);
    return statements.statement<{ routed: boolean }>(
      'events_settle',
      sql`
        WITH settled AS (
          UPDATE ${eventRoutes} AS r SET outcome = v.outcome, updated_at = now(),
            reason_code = v.reason_code,
            detail = CASE WHEN v.outcome = 'dead_letter'
                          THEN left(v.detail || coalesce('; ' || r.detail, ''), ${MAX_ROUTE_DETAIL}) ELSE r.detail END,
            dead_letter_count = r.dead_letter_count + (v.outcome = 'dead_letter')::int,
            dead_lettered_at = CASE WHEN v.outcome = 'dead_letter' THEN now() ELSE r.dead_lettered_at END
          FROM jsonb_to_recordset(${p('settlements')}::jsonb) AS v(activity_id uuid, outcome text, reason_code text, detail text)
          WHERE r.event_id = ${p('eventId')} AND r.activity_id = v.activity_id AND r.outcome = 'pending'
          RETURNING r.activity_id
        ), event AS (
          UPDATE ${events} SET
            ${
              failed
                ? sql`last_error = ${p('message')}::text, next_attempt_at = now() + make_interval(secs => ${p('retrySeconds')}::double precision)`
                : sql`routing_state = 'routed', routed_at = now(), last_error = NULL`
            }
          WHERE event_id = ${p('eventId')} AND routing_state = 'pending'
            ${
              failed
                ? sql``
                : sql`AND NOT EXISTS (
                    SELECT 1 FROM ${eventRoutes} p
                    WHERE p.event_id = ${p('eventId')} AND p.outcome = 'pending'
                      AND p.activity_id NOT IN (SELECT v.activity_id FROM jsonb_to_recordset(${p('settlements')}::jsonb) AS v(activity_id uuid, outcome text)))`
            }
          RETURNING routing_state
        )
        SELECT coalesce((SELECT routing_state = 'routed' FROM event), false) AS routed`,
    );
  }

  const settles = { routed: buildSettleStatement(false), failed: buildSettleStatement(true) };
  async function get(eventId: string): Promise<{ event: EventRow; routes: EventRouteRow[] } | undefined> {
    const [event] = await db.select().from(events).where(eq(events.eventId, eventId));
    if (event === undefined) return undefined;
    const routes = await db
      .select()
      .from(eventRoutes)
      .where(eq(eventRoutes.eventId, eventId))
      .orderBy(asc(eventRoutes.createdAt), asc(eventRoutes.activityId));
    return { event, routes };
  }

  return {
    /**
     * Stores an event and its routing decisions in one statement (one round
     * trip, one commit), or reports that the id is already taken. Concurrent
     * deliveries of one id serialise on the primary key: the loser's insert
     * waits for the winner's commit and then reads the winner's routes.
     *
     * Accepts asked for in the same turn of the event loop share that
     * statement (up to ACCEPT_GROUP_MAX events, distinct ids; a second
     * delivery of an id goes in another statement): a busy process pays one
     * round trip and one commit for the group. Each event keeps its own
     * checks and its own answer. The group commits or fails as one: when
     * Postgres answers it with an error (a value it refuses, a timeout), it
     * rolled back and each event is accepted again alone, so only the one at
     * fault fails; a connection lost without an answer (which may have
     * committed) is every event's answer, as it would have been alone.
     *
     * With `definitionsVersion` (the definitions' change counter the routes
     * were decided at) nothing is stored unless the counter still has that
     * value when the statement runs: a definition changed since then gives
     * `stale_definitions`, and the caller decides again. A redelivery is
     * answered whatever the counter says: its routes were fixed at its first
     * accept.
     *
     * With `webhookSourcesVersion` (the webhook sources' change counter the
     * caller checked the event's source against: reserved sources) nothing
     * is stored, and a redelivery is not answered either, unless that
     * counter still has that value: otherwise `stale_webhook_sources`. The
     * check and the store are then one decision, with no read in between.
     *
     * A pending route whose run is already recorded in `activity_runs` (an
     * event forgotten by the retention sweeper and delivered again) is stored
     * as `duplicate` at once: no start is asked of Temporal, whose memory of
     * closed runs ends with its namespace retention while ours does not.
     *
     * `leaseMs` keeps background dispatchers off the event while the caller
     * routes it inline.
     *
     * An event of a type some `wait_for_event` task is waiting for (an open
     * row in `event_waits`, looked up in the same statement) is stored
     * pending even when no route needs Temporal: its waits are matched and
     * signalled by the dispatch, and retried by the dispatcher if need be.
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
      /** The definitions' change counter the routes were decided at; unchecked when absent. */
      definitionsVersion?: bigint;
      /** Store the event pending even if no route needs Temporal (it has other routing work: cancel_on). */
      holdForRouting?: boolean;
      /** The webhook sources' change counter the event's source was checked against; unchecked when absent. */
      webhookSourcesVersion?: bigint;
    }): Promise<AcceptResult> {
      const { envelope } = input;
      // Filtered routes are settled at birth; only pending ones need Temporal.
      const settled =
        input.holdForRouting !== true && input.routes.every((route) => (route.outcome ?? 'pending') !== 'pending');
      const routes = input.routes.map((route) => ({
        activity_id: route.activityId,
        activity_version: route.activityVersion,
        activity_name: route.activityName,
        workflow_id: route.workflowId,
        run_id: route.runId,
        outcome: route.outcome ?? 'pending',
        detail: route.detail ?? null,
        expires_at: route.expiresAt?.toISOString() ?? null,
      }));
      const expected = input.definitionsVersion === undefined ? null : input.definitionsVersion.toString();
      const row = await enqueue({
        event_id: envelope.event_id,
        source: envelope.source,
        event_type: envelope.event_type,
        subject: envelope.subject ?? null,
        occurred_at: new Date(envelope.occurred_at).toISOString(),
        payload: envelope,
        fingerprint: input.fingerprint,
        id_origin: input.idOrigin,
        credential: input.credential ?? null,
        hops: input.hops ?? 0,
        settled,
        lease_seconds: input.leaseMs / 1000,
        expected,
        expected_sources: input.webhookSourcesVersion === undefined ? null : input.webhookSourcesVersion.toString(),
        routes,
      });
      if (row.inserted !== null) {
        return {
          kind: 'accepted',
          event: eventFromJson(row.inserted),
          routes: byDecisionOrder(row.inserted_routes.map(routeFromJson), input.routes),
          waitsOpen: row.waits_open,
        };
      }
      // Checked against sources that have changed since: no answer either way (a new reservation refuses redeliveries too).
      if (!row.sources_current) return { kind: 'stale_webhook_sources' };
      let existing =
        row.existing === null
          ? undefined
          : { event: eventFromJson(row.existing), routes: row.existing_routes.map(routeFromJson) };
      if (existing === undefined) {
        const stamp = row.stamp === null ? undefined : BigInt(row.stamp);
        if (expected !== null && stamp?.toString() !== expected) return { kind: 'stale_definitions', version: stamp };
        // The id conflicted with a delivery that committed while this statement waited on it, after
        // the statement's snapshot was taken: a new statement sees it.
        existing = await get(envelope.event_id);
        if (existing === undefined) throw new Error(`event ${envelope.event_id} conflicted but cannot be read`);
      }
      if (existing.event.fingerprint !== input.fingerprint)
        return { kind: 'fingerprint_mismatch', event: existing.event };
      return { kind: 'duplicate', event: existing.event, routes: existing.routes };
    },

    get,

    /**
     * Records what one routing attempt of an event achieved, in one statement:
     * Temporal's answer for each route it started (a settled route never goes
     * back to pending), then either the failure and when to try again
     * (`failure`), or, when no route of the event is left pending, the event
     * as routed. Returns true when the event was marked routed.
     */
    async settle(
      eventId: string,
      outcomes: readonly RouteSettlement[],
      failure?: { message: string; retryInMs: number },
    ): Promise<boolean> {
      const settlements = JSON.stringify(
        outcomes.map((o) =>
          o.outcome === 'dead_letter'
            ? { activity_id: o.activityId, outcome: o.outcome, reason_code: o.reason, detail: o.detail }
            : { activity_id: o.activityId, outcome: o.outcome },
        ),
      );
      const result =
        failure === undefined
          ? await settles.routed({ eventId, settlements })
          : await settles.failed({
              eventId,
              settlements,
              message: failure.message.slice(0, 2000),
              retrySeconds: failure.retryInMs / 1000,
            });
      return result.rows[0]?.routed === true;
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
          .where(
            sql`${events.eventId} IN (${sql.join(
              due.map((row) => sql`${row.eventId}`),
              sql`, `,
            )})`,
          )
          .returning();
      });
    },

    /**
     * Forgets up to `limit` routed events received before `olderThan`, with
     * their routing decisions: after that, their ids are free again (see
     * docs/ingress.md, "How long ids are remembered"). Pending events are
     * never removed — they are acknowledged and not yet routed — nor held
     * ones (until released, discarded or expired: docs/recovery.md), nor
     * events with an open dead letter (until it is retried or discarded). Safe with any
     * number of concurrent callers: rows another sweeper holds are skipped.
     * Returns how many events were removed.
     */
    async purgeRoutedBefore(olderThan: Date, limit: number): Promise<number> {
      const result = await db.execute(sql`
        WITH doomed AS (
          SELECT ${events.eventId} AS event_id FROM ${events}
          WHERE ${events.receivedAt} < ${olderThan.toISOString()}::timestamptz AND ${events.routingState} = 'routed'
            AND NOT EXISTS (SELECT 1 FROM ${eventRoutes} h WHERE h.event_id = ${events.eventId} AND h.outcome = 'held')
            -- An open dead letter is kept until it is retried or discarded (docs/recovery.md, "Dead letters").
            AND NOT EXISTS (
              SELECT 1 FROM ${eventRoutes} d
              WHERE d.event_id = ${events.eventId} AND d.outcome = 'dead_letter' AND d.discarded_at IS NULL)
          ORDER BY ${events.receivedAt}
          LIMIT ${limit}
          FOR UPDATE SKIP LOCKED
        ), routes AS (
          DELETE FROM ${eventRoutes} WHERE ${eventRoutes.eventId} IN (SELECT event_id FROM doomed)
        )
        DELETE FROM ${events} WHERE ${events.eventId} IN (SELECT event_id FROM doomed)`);
      return result.rowCount ?? 0;
    },

    /**
     * Clears the `data` of routed events received before `olderThan` (payload
     * retention), up to `limit` per statement, skipping rows another purger
     * holds. An event keeps its data while any of its routes is not final —
     * still to be started, in a debounce window, held or dead-lettered — since
     * that route still needs it. Answers how many were cleared.
     */
    async expirePayloadsBefore(olderThan: Date, limit: number): Promise<number> {
      const result = await db.execute(sql`
        WITH doomed AS (
          SELECT e.event_id FROM ${events} e
          WHERE e.received_at < ${olderThan.toISOString()}::timestamptz
            AND e.payload_expired_at IS NULL
            AND e.routing_state = 'routed'
            AND NOT EXISTS (
              SELECT 1 FROM ${eventRoutes} r
              WHERE r.event_id = e.event_id
                AND (r.outcome IN ('pending','coalescing','held') OR (r.outcome = 'dead_letter' AND r.discarded_at IS NULL))
            )
          ORDER BY e.received_at
          LIMIT ${limit}
          FOR UPDATE SKIP LOCKED
        )
        UPDATE ${events} SET payload = jsonb_set(payload, '{data}', '{}'::jsonb), payload_expired_at = now()
        WHERE event_id IN (SELECT event_id FROM doomed)`);
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
