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
import { decideBatchJoin } from '../batch-decision';
import { activityDefinitions, coalesceWindows, eventRoutes, events } from '../schema';

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

/**
 * What adding an event to its key's batch did (`joinBatch`):
 * - `opened`: the event opened a batch (its route stays `pending` until the
 *   batch's workflow is started);
 * - `joined`: the event joined the open batch (its route is `coalescing`);
 * - `closed`: the event joined a batch and closed it (`max_size`, or the byte
 *   cap reached); its route stays `pending` until the batch's workflow was
 *   woken to start the run;
 * - `member`: the route had joined `window` before (a retry);
 * - `alone`: the activity has `maxOpen` open windows and this key none;
 * - `settled`: the route is no longer pending.
 * `wake` lists the batches this transaction closed whose workflows must look
 * again now (the joined batch when it closed, a batch closed by the byte cap).
 */
export type BatchJoinOutcome =
  | { kind: 'opened' | 'joined' | 'closed' | 'member'; window: CoalesceWindowRow; wake: CoalesceWindowRow[] }
  | { kind: 'alone'; openWindows: number }
  | { kind: 'settled' };

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

/**
 * Closes a batch in the caller's transaction: the window `closed` with its
 * run named, every member's route but the last `batched` into the run (its
 * `detail`: `in batch <window> (k of N)`); the last member's route keeps its
 * outcome (`coalescing`, or `pending` while its dispatch has not woken the
 * batch's workflow) until the run is started (`markStarted`).
 */
async function closeBatch(
  tx: Tx,
  window: CoalesceWindowRow,
  run: { workflowId: string; runId: string },
  reason: string,
): Promise<CoalesceWindowRow> {
  const n = window.memberCount;
  await tx.execute(sql`
    UPDATE ${coalesceWindows} SET state = 'closed', closed_at = now(), run_workflow_id = ${run.workflowId}
    WHERE ${coalesceWindows.id} = ${window.id}`);
  await tx.execute(sql`
    UPDATE ${eventRoutes} SET outcome = 'batched', workflow_id = ${run.workflowId}, run_id = ${run.runId},
      detail = 'in batch ' || ${window.id}::text || ' (' || ${eventRoutes.windowPosition} || ' of ' || ${n}::int || ${`; closed by ${reason}): run ${run.workflowId}`},
      updated_at = now()
    WHERE ${eventRoutes.windowId} = ${window.id} AND ${eventRoutes.eventId} <> ${window.lastEventId}`);
  await tx.execute(sql`
    UPDATE ${eventRoutes} SET workflow_id = ${run.workflowId}, run_id = ${run.runId},
      detail = ${`in batch ${window.id} (${n} of ${n}; closed by ${reason}): its run ${run.workflowId} is being started`},
      updated_at = now()
    WHERE ${eventRoutes.windowId} = ${window.id} AND ${eventRoutes.eventId} = ${window.lastEventId}
      AND ${eventRoutes.outcome} IN ('pending', 'coalescing')`);
  return { ...window, state: 'closed', runWorkflowId: run.workflowId };
}

export function createCoalesceWindowsRepository(db: Db) {
  return {
    /**
     * Adds a pending route's event to its key's open batch (or opens one), in
     * one transaction that locks the route first, then the open batch: an
     * event is in exactly one batch, at one position, however often this is
     * retried. The event that fills the batch (`maxSize`, or the byte cap)
     * closes it here; an event that would take the batch past `maxBytes`
     * closes it without itself and opens the next (batch-decision.ts).
     */
    async joinBatch(input: {
      eventId: string;
      activityId: string;
      activityVersion: number;
      key: string;
      timeoutMs: number;
      maxSize: number;
      maxBytes: number;
      /** The event's size: the UTF-8 bytes of its envelope's JSON. */
      bytes: number;
      /** Most open windows per activity; past it a new key's event runs alone. */
      maxOpen: number;
      /** The workflow id of a window with this id (ids.ts). */
      workflowIdOf: (windowId: string) => string;
      /** The run of a batch with this window id (ids.ts `batchRunWorkflowId`, `runIdFor`). */
      runOf: (windowId: string) => { workflowId: string; runId: string };
    }): Promise<BatchJoinOutcome> {
      return await db.transaction(async (tx): Promise<BatchJoinOutcome> => {
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
          const window = windowOf(found.rows[0]!);
          if (route.outcome !== 'pending') return { kind: 'member', window, wake: [] };
          // A retried opener also wakes the batch its transaction closed by the byte cap: closed in that very
          // transaction, so its closed_at is this batch's opened_at (both now() of one transaction).
          const closedByIt =
            window.firstEventId === input.eventId
              ? await tx.execute<WindowSql & Record<string, unknown>>(sql`
                  SELECT * FROM ${coalesceWindows}
                  WHERE ${coalesceWindows.activityId} = ${input.activityId} AND ${coalesceWindows.key} = ${input.key}
                    AND ${coalesceWindows.kind} = 'batch' AND ${coalesceWindows.state} = 'closed'
                    AND ${coalesceWindows.closedAt} = ${window.openedAt.toISOString()}::timestamptz
                    AND ${coalesceWindows.id} <> ${window.id}`)
              : { rows: [] };
          return { kind: 'member', window, wake: [window, ...closedByIt.rows.map((row) => windowOf(row))] };
        }
        if (route.outcome !== 'pending') return { kind: 'settled' };
        const wake: CoalesceWindowRow[] = [];
        // Twice at most: a first event of the key racing another one's insert finds its batch on the second look.
        for (let attempt = 0; ; attempt++) {
          const found = await tx.execute<WindowSql & Record<string, unknown>>(sql`
            SELECT * FROM ${coalesceWindows}
            WHERE ${coalesceWindows.activityId} = ${input.activityId} AND ${coalesceWindows.key} = ${input.key}
              AND ${coalesceWindows.state} = 'open'
            FOR UPDATE`);
          const open = found.rows[0] === undefined ? undefined : windowOf(found.rows[0]);
          if (open !== undefined && open.kind !== 'batch') {
            // The definition changed from debounce to batch while a debounce window of this key is open: the key's one
            // open window is taken, so the event runs alone (recorded) until that window closed.
            await tx.execute(sql`
              UPDATE ${eventRoutes} SET detail = ${`ran alone: the key's open window ${open.id} is a ${open.kind} window (the definition changed)`},
                updated_at = now()
              WHERE ${eventRoutes.eventId} = ${input.eventId} AND ${eventRoutes.activityId} = ${input.activityId}`);
            return { kind: 'alone', openWindows: 0 };
          }
          const decision = decideBatchJoin(
            open === undefined ? undefined : { count: open.memberCount, bytes: open.memberBytes },
            input.bytes,
            { maxSize: input.maxSize, maxBytes: input.maxBytes },
          );
          let window: CoalesceWindowRow;
          if (decision.into === 'open') {
            const updated = await tx.execute<WindowSql & Record<string, unknown>>(sql`
              UPDATE ${coalesceWindows} SET member_count = member_count + 1, member_bytes = member_bytes + ${input.bytes},
                last_event_id = ${input.eventId}, last_activity_version = ${input.activityVersion}, last_event_at = now()
              WHERE ${coalesceWindows.id} = ${open!.id}
              RETURNING *`);
            window = windowOf(updated.rows[0]!);
          } else {
            if (open === undefined) {
              const counted = await tx.execute<{ n: number }>(sql`
                SELECT count(*)::int AS n FROM (
                  SELECT 1 FROM ${coalesceWindows}
                  WHERE ${coalesceWindows.activityId} = ${input.activityId} AND ${coalesceWindows.state} = 'open'
                  LIMIT ${input.maxOpen}) open_windows`);
              const openWindows = counted.rows[0]?.n ?? 0;
              if (openWindows >= input.maxOpen) {
                await tx.execute(sql`
                  UPDATE ${eventRoutes} SET detail = ${`ran alone: the activity has ${openWindows} open batches (the limit)`},
                    updated_at = now()
                  WHERE ${eventRoutes.eventId} = ${input.eventId} AND ${eventRoutes.activityId} = ${input.activityId}`);
                return { kind: 'alone', openWindows };
              }
            } else {
              wake.push(await closeBatch(tx, open, input.runOf(open.id), 'max_bytes: the next event would pass it'));
            }
            const id = randomUUID();
            const inserted = await tx.execute<WindowSql & Record<string, unknown>>(sql`
              INSERT INTO ${coalesceWindows} (id, activity_id, kind, mode, key, workflow_id, period_ms, due_at, deadline_at,
                member_bytes, first_event_id, last_event_id, last_activity_version)
              VALUES (${id}, ${input.activityId}, 'batch', 'trailing', ${input.key}, ${input.workflowIdOf(id)}, ${input.timeoutMs},
                now() + make_interval(secs => ${input.timeoutMs / 1000}::double precision),
                now() + make_interval(secs => ${input.timeoutMs / 1000}::double precision),
                ${input.bytes}, ${input.eventId}, ${input.eventId}, ${input.activityVersion})
              ON CONFLICT (activity_id, key) WHERE state = 'open' DO NOTHING
              RETURNING *`);
            if (inserted.rows[0] === undefined) {
              if (attempt > 0 || open !== undefined) throw new Error(`batch of key ${input.key} could not be opened`);
              continue;
            }
            window = windowOf(inserted.rows[0]);
          }
          const closes = decision.closeAfter !== undefined;
          const opener = decision.into === 'new';
          await tx.execute(sql`
            UPDATE ${eventRoutes} SET window_id = ${window.id}, window_position = ${decision.position},
              outcome = ${opener || closes ? 'pending' : 'coalescing'},
              detail = ${`in batch ${window.id} (event ${decision.position}${opener ? ', opened it' : ''})`},
              updated_at = now()
            WHERE ${eventRoutes.eventId} = ${input.eventId} AND ${eventRoutes.activityId} = ${input.activityId}`);
          if (closes) {
            const reason =
              decision.closeAfter === 'max_size'
                ? `max_size ${input.maxSize}`
                : `max_bytes ${input.maxBytes}${decision.position === 1 ? ': this event alone reaches it' : ''}`;
            window = await closeBatch(tx, window, input.runOf(window.id), reason);
            wake.push(window);
          }
          return { kind: closes ? 'closed' : opener ? 'opened' : 'joined', window, wake };
        }
      });
    },

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
        const open = await tx.execute<{ id: string; kind: string }>(sql`
          SELECT ${coalesceWindows.id} AS id, ${coalesceWindows.kind} AS kind FROM ${coalesceWindows}
          WHERE ${coalesceWindows.activityId} = ${input.activityId} AND ${coalesceWindows.key} = ${input.key}
            AND ${coalesceWindows.state} = 'open'`);
        const batch = open.rows.find((row) => row.kind !== 'debounce');
        if (batch !== undefined) {
          // The definition changed from batch to debounce while a batch of this key is open (ADR 0070): the key's one
          // open window is taken, so the event runs alone (recorded) until the batch closed.
          await tx.execute(sql`
            UPDATE ${eventRoutes} SET detail = ${`ran alone: the key's open window ${batch.id} is a ${batch.kind} window (the definition changed)`},
              updated_at = now()
            WHERE ${eventRoutes.eventId} = ${input.eventId} AND ${eventRoutes.activityId} = ${input.activityId}`);
          return { kind: 'alone', openWindows: 0 };
        }
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
      runOf: (window: CoalesceWindowRow) => { workflowId: string; runId: string },
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
        const run = runOf(window);
        if (window.kind === 'batch') {
          const closed = await closeBatch(tx, window, run, 'timeout');
          return { state: 'closed', window: { ...closed, runWorkflowId: run.workflowId } };
        }
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

    /** The envelopes (as accepted) of a batch's members in arrival order, and the hop count of the last. */
    async batchEnvelopesOf(windowId: string): Promise<{ envelopes: unknown[]; hops: number }> {
      const found = await db.execute<{ payload: unknown; hops: number }>(sql`
        SELECT ${events.payload} AS payload, ${events.hops} AS hops FROM ${eventRoutes}
        JOIN ${events} ON ${events.eventId} = ${eventRoutes.eventId}
        WHERE ${eventRoutes.windowId} = ${windowId}
        ORDER BY ${eventRoutes.windowPosition}`);
      return {
        envelopes: found.rows.map((row) => row.payload),
        hops: found.rows.reduce((most, row) => Math.max(most, row.hops), 0),
      };
    },

    /** Records that the closed window's run was started (or already existed): its last event's route `started` (a batch's: `batched`). */
    async markStarted(window: CoalesceWindowRow, outcome: 'started' | 'duplicate'): Promise<void> {
      if (window.kind === 'batch') {
        // The close wrote "… (N of N; closed by <reason>): its run <id> is being started": the reason stays.
        await db.execute(sql`
          UPDATE ${eventRoutes} SET outcome = 'batched',
            detail = replace(${eventRoutes.detail}, ${`: its run ${window.runWorkflowId} is being started`},
              ${`: started run ${window.runWorkflowId}${outcome === 'duplicate' ? ' (the run already existed)' : ''}`}),
            updated_at = now()
          WHERE ${eventRoutes.windowId} = ${window.id} AND ${eventRoutes.eventId} = ${window.lastEventId}
            AND ${eventRoutes.outcome} IN ('pending', 'coalescing')`);
        return;
      }
      await db.execute(sql`
        UPDATE ${eventRoutes} SET outcome = 'started',
          detail = ${`started the run of debounce window ${window.id}: ${window.memberCount} events, ${window.memberCount - 1} merged into it${outcome === 'duplicate' ? ' (the run already existed)' : ''}`},
          updated_at = now()
        WHERE ${eventRoutes.windowId} = ${window.id} AND ${eventRoutes.eventId} = ${window.lastEventId}
          AND ${eventRoutes.outcome} = 'coalescing'`);
    },

    /**
     * Open windows (debounce or batch) whose due time passed more than
     * `graceMs` ago, oldest first, with their activity's name: a window's
     * workflow closes it when it is due, so one still open long after is one
     * whose workflow ended without closing it (terminated by an operator) or
     * is not running (no worker).
     */
    async overdueOpen(graceMs: number, limit: number): Promise<Array<CoalesceWindowRow & { activityName: string }>> {
      const found = await db.execute<WindowSql & { activity_name: string | null } & Record<string, unknown>>(sql`
        SELECT w.*, d.name AS activity_name FROM ${coalesceWindows} w
        LEFT JOIN ${activityDefinitions} d ON d.id = w.activity_id
        WHERE w.state = 'open' AND w.due_at < now() - make_interval(secs => ${graceMs / 1000})
        ORDER BY w.due_at LIMIT ${limit}`);
      return found.rows.map((row) => ({ ...windowOf(row), activityName: row.activity_name ?? row.activity_id }));
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
