/**
 * Debounce windows (docs/coalescing.md, ADR 0066): Postgres holds which events
 * are in a window, Temporal (one workflow per window) holds its timer. Every
 * write here is one transaction, idempotent, and ordered by the window row's
 * lock, so two API processes accepting events of one key, a dispatcher
 * retrying one, and the window's workflow closing it serialise on that row.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { Db } from '../client';
import { coalesceWindows, eventRoutes, events } from '../schema';

export type CoalesceWindowRow = typeof coalesceWindows.$inferSelect;

/** A window as raw SQL returns it (snake_case, timestamps as Date from node-postgres). */
interface WindowSql {
  id: string;
  activity_id: string;
  kind: string;
  mode: string;
  key: string;
  state: string;
  workflow_id: string;
  period_ms: number;
  opened_at: Date | string;
  last_event_at: Date | string;
  due_at: Date | string;
  deadline_at: Date | string;
  member_count: number;
  member_bytes: string | number;
  first_event_id: string;
  last_event_id: string;
  last_activity_version: number;
  run_workflow_id: string | null;
  closed_at: Date | string | null;
}

const date = (value: Date | string): Date => (value instanceof Date ? value : new Date(value));

function windowOf(row: WindowSql): CoalesceWindowRow {
  return {
    id: row.id,
    activityId: row.activity_id,
    kind: row.kind,
    mode: row.mode,
    key: row.key,
    state: row.state,
    workflowId: row.workflow_id,
    periodMs: row.period_ms,
    openedAt: date(row.opened_at),
    lastEventAt: date(row.last_event_at),
    dueAt: date(row.due_at),
    deadlineAt: date(row.deadline_at),
    memberCount: row.member_count,
    memberBytes: Number(row.member_bytes),
    firstEventId: row.first_event_id,
    lastEventId: row.last_event_id,
    lastActivityVersion: row.last_activity_version,
    runWorkflowId: row.run_workflow_id,
    closedAt: row.closed_at === null ? null : date(row.closed_at),
  };
}

/**
 * What joining an event's route to its key's window did:
 * - `opened`: the event opened a new window; its route stays `pending` until
 *   the window's workflow is started (the dispatcher retries that start);
 * - `joined`: the event joined the open window; its route is `coalescing`;
 * - `member`: the route had joined `window` before (a retry): nothing changed;
 * - `alone`: the activity has `maxOpen` open windows and this key none: the
 *   event runs alone, as if it had no debounce (recorded in the route's detail);
 * - `merged` (leading mode): the event joined an open window whose first
 *   event's run started at once; its route is `merged` into that run;
 * - `settled`: the route is no longer pending (merged or started already).
 */
export type JoinOutcome =
  | { kind: 'opened' | 'joined' | 'member' | 'merged'; window: CoalesceWindowRow }
  | { kind: 'alone'; openWindows: number }
  | { kind: 'settled' };

/**
 * What advancing a window did: still `open` (due in `dueInMs`, by Postgres'
 * clock), or `closed` now or before — its members' outcomes recorded, the run
 * to start named (`runWorkflowId`, `runEventId` the event whose id it bears).
 */
export type AdvanceOutcome =
  | { state: 'open'; dueInMs: number; window: CoalesceWindowRow }
  | { state: 'closed'; window: CoalesceWindowRow & { runWorkflowId: string } };

export function createCoalesceWindowsRepository(db: Db) {
  return {
    /**
     * Puts a pending route's event in its key's open debounce window (or
     * opens one), in one transaction that locks the route first: an event is
     * in exactly one window, however often this is retried. A later event
     * pushes the window's due time to `period` after it, never past the
     * window's deadline (`max_wait` after it opened).
     */
    async join(input: {
      eventId: string;
      activityId: string;
      activityVersion: number;
      key: string;
      periodMs: number;
      maxWaitMs: number;
      /** The event's size, counted into the window (bounds, docs/coalescing.md). */
      bytes: number;
      /** Most open windows per activity; past it a new key's event runs alone. */
      maxOpen: number;
      /** The workflow id of a window with this id (ids.ts). */
      workflowIdOf: (windowId: string) => string;
      /**
       * Leading mode: the run of the event that opens a window (its own
       * `activity-…:<event_id>`, started by the caller at once); later events
       * are merged into it. A leading window past its due time is closed by
       * the next event of its key, which opens a new one. @default trailing
       */
      leading?: { runWorkflowId: string };
      /** The run id of a run workflow id (ids.ts `runIdFor`), for routes merged into a leading window's run. */
      runIdOf: (runWorkflowId: string) => string;
    }): Promise<JoinOutcome> {
      const mode = input.leading === undefined ? 'trailing' : 'leading';
      return await db.transaction(async (tx) => {
        const routes = await tx.execute<{ outcome: string; window_id: string | null }>(sql`
          SELECT ${eventRoutes.outcome} AS outcome, ${eventRoutes.windowId} AS window_id FROM ${eventRoutes}
          WHERE ${eventRoutes.eventId} = ${input.eventId} AND ${eventRoutes.activityId} = ${input.activityId}
          FOR UPDATE`);
        const route = routes.rows[0];
        if (route === undefined) throw new Error(`event ${input.eventId} has no route for ${input.activityId}`);
        if (route.window_id !== null) {
          const found = await tx.execute<WindowSql & Record<string, unknown>>(
            sql`SELECT * FROM ${coalesceWindows} WHERE ${coalesceWindows.id} = ${route.window_id}`,
          );
          return { kind: 'member', window: windowOf(found.rows[0]!) };
        }
        if (route.outcome !== 'pending') return { kind: 'settled' };
        // A leading window whose quiet period (or max_wait) passed has done its work: the next event opens a new one.
        await tx.execute(sql`
            UPDATE ${coalesceWindows} SET state = 'closed', closed_at = now()
            WHERE ${coalesceWindows.activityId} = ${input.activityId} AND ${coalesceWindows.key} = ${input.key}
              AND ${coalesceWindows.state} = 'open' AND ${coalesceWindows.mode} = 'leading' AND ${coalesceWindows.dueAt} <= now()`);
        const open = await tx.execute<{ id: string }>(sql`
          SELECT ${coalesceWindows.id} AS id FROM ${coalesceWindows}
          WHERE ${coalesceWindows.activityId} = ${input.activityId} AND ${coalesceWindows.key} = ${input.key}
            AND ${coalesceWindows.state} = 'open'`);
        if (open.rows.length === 0) {
          const counted = await tx.execute<{ n: number }>(sql`
            SELECT count(*)::int AS n FROM (
              SELECT 1 FROM ${coalesceWindows}
              WHERE ${coalesceWindows.activityId} = ${input.activityId} AND ${coalesceWindows.state} = 'open'
                AND (${coalesceWindows.mode} = 'trailing' OR ${coalesceWindows.dueAt} > now())
              LIMIT ${input.maxOpen}) open_windows`);
          const openWindows = counted.rows[0]?.n ?? 0;
          if (openWindows >= input.maxOpen) {
            await tx.execute(sql`
              UPDATE ${eventRoutes} SET detail = ${`ran alone: the activity has ${openWindows} open debounce windows (the limit)`},
                updated_at = now()
              WHERE ${eventRoutes.eventId} = ${input.eventId} AND ${eventRoutes.activityId} = ${input.activityId}`);
            return { kind: 'alone', openWindows };
          }
        }
        const id = randomUUID();
        // The upsert locks the open window of the key (or creates it): concurrent joins of one key queue here.
        const upserted = await tx.execute<WindowSql & { inserted: boolean } & Record<string, unknown>>(sql`
          INSERT INTO ${coalesceWindows} (id, activity_id, kind, mode, key, workflow_id, period_ms, due_at, deadline_at,
            member_bytes, first_event_id, last_event_id, last_activity_version, run_workflow_id)
          VALUES (${id}, ${input.activityId}, 'debounce', ${mode}, ${input.key}, ${input.workflowIdOf(id)}, ${input.periodMs},
            now() + make_interval(secs => ${input.periodMs / 1000}::double precision),
            now() + make_interval(secs => ${input.maxWaitMs / 1000}::double precision),
            ${input.bytes}, ${input.eventId}, ${input.eventId}, ${input.activityVersion}, ${input.leading?.runWorkflowId ?? null})
          ON CONFLICT (activity_id, key) WHERE state = 'open' DO UPDATE SET
            last_event_id = EXCLUDED.last_event_id,
            last_activity_version = EXCLUDED.last_activity_version,
            last_event_at = now(),
            member_count = ${coalesceWindows}.member_count + 1,
            member_bytes = ${coalesceWindows}.member_bytes + EXCLUDED.member_bytes,
            due_at = greatest(${coalesceWindows}.due_at, least(${coalesceWindows}.deadline_at,
              now() + make_interval(secs => ${coalesceWindows}.period_ms / 1000.0)))
          RETURNING *, (xmax = 0) AS inserted`);
        const row = upserted.rows[0]!;
        const window = windowOf(row);
        const inserted = row.inserted === true;
        if (window.mode === 'leading') {
          // Leading: the opener runs at once (its route stays pending for the caller's start); the rest merge now.
          const run = window.runWorkflowId!;
          await tx.execute(
            inserted
              ? sql`
                UPDATE ${eventRoutes} SET window_id = ${window.id},
                  detail = ${`opened debounce window ${window.id} (leading: this event runs; the rest of the burst merges into its run)`},
                  updated_at = now()
                WHERE ${eventRoutes.eventId} = ${input.eventId} AND ${eventRoutes.activityId} = ${input.activityId}`
              : sql`
                UPDATE ${eventRoutes} SET window_id = ${window.id}, outcome = 'merged', workflow_id = ${run},
                  run_id = ${input.runIdOf(run)},
                  detail = ${`merged into run ${run} (debounce, leading: event ${window.memberCount} of window ${window.id}; its first event ran)`},
                  updated_at = now()
                WHERE ${eventRoutes.eventId} = ${input.eventId} AND ${eventRoutes.activityId} = ${input.activityId}`,
          );
          return { kind: inserted ? 'opened' : 'merged', window };
        }
        await tx.execute(sql`
          UPDATE ${eventRoutes} SET window_id = ${window.id},
            outcome = ${inserted ? 'pending' : 'coalescing'},
            detail = ${`in debounce window ${window.id} (${inserted ? 'opened it' : `event ${window.memberCount} of it`})`},
            updated_at = now()
          WHERE ${eventRoutes.eventId} = ${input.eventId} AND ${eventRoutes.activityId} = ${input.activityId}`);
        return { kind: inserted ? 'opened' : 'joined', window };
      });
    },

    async get(windowId: string): Promise<CoalesceWindowRow | undefined> {
      const found = await db.execute<WindowSql & Record<string, unknown>>(
        sql`SELECT * FROM ${coalesceWindows} WHERE ${coalesceWindows.id} = ${windowId}`,
      );
      const row = found.rows[0];
      return row === undefined ? undefined : windowOf(row);
    },

    /**
     * Closes the window if it is due (by Postgres' clock), in one transaction:
     * the window `closed` with its run named (the run of its last event,
     * `runWorkflowIdOf`), every other member's route `merged` into that run,
     * the last event's route `coalescing` until its run is started
     * (`markStarted`). Repeated, it answers the closed window as it is.
     */
    async advance(
      windowId: string,
      runWorkflowIdOf: (activityId: string, eventId: string) => { workflowId: string; runId: string },
    ): Promise<AdvanceOutcome> {
      return await db.transaction(async (tx): Promise<AdvanceOutcome> => {
        const found = await tx.execute<WindowSql & { due_in_ms: number } & Record<string, unknown>>(sql`
          SELECT *, greatest(0, extract(epoch FROM (due_at - now())) * 1000)::double precision AS due_in_ms
          FROM ${coalesceWindows} WHERE ${coalesceWindows.id} = ${windowId} FOR UPDATE`);
        const row = found.rows[0];
        if (row === undefined) throw new Error(`debounce window ${windowId} does not exist`);
        const window = windowOf(row);
        if (window.state === 'closed' && window.runWorkflowId !== null)
          return { state: 'closed', window: { ...window, runWorkflowId: window.runWorkflowId } };
        if (row.due_in_ms > 0) return { state: 'open', dueInMs: Math.ceil(Number(row.due_in_ms)), window };
        const run = runWorkflowIdOf(window.activityId, window.lastEventId);
        await tx.execute(sql`
          UPDATE ${coalesceWindows} SET state = 'closed', closed_at = now(), run_workflow_id = ${run.workflowId}
          WHERE ${coalesceWindows.id} = ${windowId}`);
        await tx.execute(sql`
          UPDATE ${eventRoutes} SET outcome = 'merged', workflow_id = ${run.workflowId}, run_id = ${run.runId},
            detail = ${`merged into run ${run.workflowId} (debounce: window ${windowId} of ${window.memberCount} events; its last event runs)`},
            updated_at = now()
          WHERE ${eventRoutes.windowId} = ${windowId} AND ${eventRoutes.eventId} <> ${window.lastEventId}`);
        await tx.execute(sql`
          UPDATE ${eventRoutes} SET outcome = 'coalescing',
            detail = ${`last event of debounce window ${windowId} (${window.memberCount} events): its run is being started`},
            updated_at = now()
          WHERE ${eventRoutes.windowId} = ${windowId} AND ${eventRoutes.eventId} = ${window.lastEventId}
            AND ${eventRoutes.outcome} IN ('pending', 'coalescing')`);
        return { state: 'closed', window: { ...window, state: 'closed', runWorkflowId: run.workflowId } };
      });
    },

    /** The envelope (as accepted) of a window member, and its emit_event hop count. */
    async envelopeOf(eventId: string): Promise<{ envelope: unknown; hops: number } | undefined> {
      const found = await db.execute<{ payload: unknown; hops: number }>(
        sql`SELECT ${events.payload} AS payload, ${events.hops} AS hops FROM ${events} WHERE ${events.eventId} = ${eventId}`,
      );
      const row = found.rows[0];
      return row === undefined ? undefined : { envelope: row.payload, hops: row.hops };
    },

    /** Records that the closed window's run was started (or already existed): its last event's route `started`. */
    async markStarted(window: CoalesceWindowRow, outcome: 'started' | 'duplicate'): Promise<void> {
      await db.execute(sql`
        UPDATE ${eventRoutes} SET outcome = 'started',
          detail = ${`started the run of debounce window ${window.id}: ${window.memberCount} events, ${window.memberCount - 1} merged into it${outcome === 'duplicate' ? ' (the run already existed)' : ''}`},
          updated_at = now()
        WHERE ${eventRoutes.windowId} = ${window.id} AND ${eventRoutes.eventId} = ${window.lastEventId}
          AND ${eventRoutes.outcome} = 'coalescing'`);
    },

    /** Open windows per activity (the gauge of docs/coalescing.md). */
    async countOpen(): Promise<Array<{ activityId: string; open: number }>> {
      const found = await db.execute<{ activity_id: string; open: number }>(sql`
        SELECT ${coalesceWindows.activityId} AS activity_id, count(*)::int AS open FROM ${coalesceWindows}
        WHERE ${coalesceWindows.state} = 'open' GROUP BY 1`);
      return found.rows.map((row) => ({ activityId: row.activity_id, open: row.open }));
    },
  };
}

export type CoalesceWindowsRepository = ReturnType<typeof createCoalesceWindowsRepository>;
