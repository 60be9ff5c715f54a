/**
 * Replays: an accepted event planned again against today's definitions.
 * `if_no_runs` opens the routes that never led to a run and starts them
 * through the event path's own dispatch (`deliverPending`, the run records,
 * REJECT_DUPLICATE on `activity-{activity_id}:{event_id}`), so a replay can
 * never run anything twice; `force` allocates `replay-{run_id}:{attempt}`
 * under a request key (like re-runs) and starts it. Bulk replays are
 * recorded here and carried out by `bulk-replay-runner.ts`.
 */
import {
  bulkReplayId,
  canonicalJson,
  GoneError,
  InvalidInputError,
  MAX_BULK_REPLAY_EVENTS,
  MAX_BULK_REPLAY_RANGE_DAYS,
  NotFoundError,
  parseIdempotencyKey,
  replayWorkflowId,
  runIdFor,
  UnavailableError,
  type ActivityDefinition,
  type BulkReplayDryRun,
  type BulkReplayRecord,
  type BulkReplayRequest,
  type EventEnvelope,
  type Logger,
  type ReplayMode,
  type ReplayResponse,
  type ReplayRun,
} from '@activity-core/contracts';
import type {
  BulkReplayRow,
  DefinitionRow,
  DefinitionsRepository,
  EventRouteRow,
  EventsRepository,
  ReplaySelection,
  ReplaysRepository,
} from '@activity-core/db';
import type { EventIngest } from '@activity-core/router';
import { isTemporalUnreachable, type RunStarter } from '@activity-core/temporal/client';
import { randomUUID } from 'node:crypto';

/** How long one forced replay start waits for Temporal. */
const START_DEADLINE_MS = 10_000;
/** How long an inline replay keeps the dispatcher off the event it reopened. */
const INLINE_LEASE_MS = 30_000;

const RUN_OUTCOMES = new Set(['started', 'duplicate']);

export interface ReplayDeps {
  events: Pick<EventsRepository, 'get'>;
  replays: ReplaysRepository;
  ingest: Pick<EventIngest, 'plan' | 'dispatch'>;
  definitions: Pick<DefinitionsRepository, 'getVersion'>;
  starter: RunStarter;
  logger: Logger;
  /** Counts what each replay did per activity (activity_core_event_replays_total). */
  onReplayed?: (mode: ReplayMode, status: ReplayRun['status']) => void;
}

/** What a bulk replay request did: counted the selection (dry run), or recorded the bulk replay the runner carries out. */
export type BulkReplayOutcome =
  { kind: 'counted'; answer: BulkReplayDryRun } | { kind: 'recorded'; answer: BulkReplayRecord };

/** Who asked and under which key: recorded with a forced replay. */
export interface ReplayRequester {
  actor: string;
  /** The request key of a forced replay (the Idempotency-Key, `bulk-replay:{id}`, or a generated one). */
  key: string;
  bulkId?: string;
}

export function createReplayService(deps: ReplayDeps) {
  let bulkAccepted: (() => void) | undefined;

  async function snapshotOf(
    activityId: string,
    version: number,
    known: ReadonlyMap<string, DefinitionRow>,
  ): Promise<DefinitionRow> {
    const snapshot = known.get(activityId);
    if (snapshot?.version === version) return snapshot;
    const row = await deps.definitions.getVersion(activityId, version);
    if (row === undefined) throw new Error(`activity ${activityId} version ${version} is missing`);
    return row;
  }

  async function replayIfNoRuns(
    envelope: EventEnvelope,
    hops: number,
    attempts: number,
    before: readonly EventRouteRow[],
    planned: Awaited<ReturnType<EventIngest['plan']>>,
    requester: ReplayRequester,
  ): Promise<ReplayRun[]> {
    const runRoutes = planned.routes.filter((route) => (route.outcome ?? 'pending') === 'pending');
    const previous = new Map(before.map((route) => [route.activityId, route]));
    const toOpen = runRoutes.filter((route) => {
      const had = previous.get(route.activityId);
      // Routes that never led to a run: stopped by a filter, dropped by a rate limit (paced again on today's
      // definition), held while the activity was disabled (a replay releases it), or a dead letter (its start
      // refused or given up on; docs/recovery.md).
      return (
        had === undefined ||
        had.outcome === 'filtered' ||
        had.outcome === 'filter_error' ||
        had.outcome === 'dropped' ||
        had.outcome === 'held' ||
        had.outcome === 'dead_letter'
      );
    });
    const note = `replayed (if_no_runs) by ${requester.actor} at ${new Date().toISOString()}`;
    const after = await deps.replays.openRoutes(envelope.event_id, toOpen, note, INLINE_LEASE_MS);
    const pending = after.filter((route) => route.outcome === 'pending');
    // The event path's own dispatch: run records checked, every start through deliverPending, then settled.
    const outcomes = pending.length === 0 ? new Map() : await deps.ingest.dispatch(envelope, after, attempts + 1, hops);
    const byActivity = new Map(after.map((route) => [route.activityId, route]));
    return runRoutes.map((route): ReplayRun => {
      const had = previous.get(route.activityId);
      const now = byActivity.get(route.activityId);
      const ran = had !== undefined && (RUN_OUTCOMES.has(had.outcome) || had.outcome === 'pending');
      // Not dispatched by this replay: a run already `started` was started by another (a concurrent replay).
      const outcome =
        (outcomes.get(route.activityId) as string | undefined) ??
        (now?.outcome === 'started' ? 'duplicate' : now?.outcome) ??
        'pending';
      const status: ReplayRun['status'] =
        ran && had.outcome !== 'pending'
          ? 'already_ran'
          : outcome === 'started' || outcome === 'duplicate'
            ? outcome
            : 'pending';
      return {
        activity_id: route.activityId,
        activity_name: route.activityName,
        workflow_id: now?.workflowId ?? route.workflowId,
        run_id: now?.runId ?? route.runId,
        status,
        replay_of: null,
        attempt: null,
      };
    });
  }

  async function replayForce(
    envelope: EventEnvelope,
    hops: number,
    planned: Awaited<ReturnType<EventIngest['plan']>>,
    requester: ReplayRequester,
  ): Promise<ReplayRun[]> {
    const results: ReplayRun[] = [];
    for (const route of planned.routes) {
      if ((route.outcome ?? 'pending') !== 'pending') continue;
      const replayOf = route.runId;
      const { row } = await deps.replays.allocateForced(replayOf, requester.key, (attempt) => {
        const workflowId = replayWorkflowId(replayOf, attempt);
        return {
          runId: runIdFor(workflowId),
          workflowId,
          eventId: envelope.event_id,
          activityId: route.activityId,
          activityVersion: route.activityVersion,
          bulkReplayId: requester.bulkId ?? null,
          requestedBy: requester.actor,
        };
      });
      const snapshot = await snapshotOf(row.activityId, row.activityVersion, planned.snapshots);
      let status: 'started' | 'duplicate';
      try {
        status = await deps.starter.start(
          {
            workflowId: row.workflowId,
            activity: {
              id: snapshot.id,
              name: snapshot.name,
              version: snapshot.version,
              definition: snapshot.definition as ActivityDefinition,
            },
            trigger: { type: 'event', event: envelope, ...(hops > 0 ? { hops } : {}) },
          },
          { deadline: new Date(Date.now() + START_DEADLINE_MS) },
        );
      } catch (error) {
        if (isTemporalUnreachable(error))
          throw new UnavailableError(
            `Temporal is unreachable; replay ${row.workflowId} is recorded and starts when the request is repeated with the same Idempotency-Key`,
          );
        throw error;
      }
      deps.logger.info({ eventId: envelope.event_id, workflowId: row.workflowId, status }, 'event replayed (force)');
      results.push({
        activity_id: route.activityId,
        activity_name: route.activityName,
        workflow_id: row.workflowId,
        run_id: row.runId,
        status,
        replay_of: replayOf,
        attempt: row.attempt,
      });
    }
    return results;
  }

  async function replay(eventId: string, mode: ReplayMode, requester: ReplayRequester): Promise<ReplayResponse> {
    const found = await deps.events.get(eventId);
    if (found === undefined) throw new NotFoundError('event', eventId);
    if (found.event.payloadExpiredAt !== null)
      throw new GoneError(
        `event ${eventId}'s data was cleared at ${found.event.payloadExpiredAt.toISOString()} (EVENT_PAYLOAD_RETENTION_DAYS): it can no longer be replayed; its decision log is kept`,
      );
    const envelope = found.event.payload as EventEnvelope;
    const planned = await deps.ingest.plan(envelope);
    const runs =
      mode === 'force'
        ? await replayForce(envelope, found.event.hops, planned, requester)
        : await replayIfNoRuns(
            envelope,
            found.event.hops,
            found.event.routingAttempts,
            found.routes,
            planned,
            requester,
          );
    for (const run of runs) deps.onReplayed?.(mode, run.status);
    return {
      event_id: eventId,
      mode,
      runs,
      filtered: planned.routes
        .filter((route) => route.outcome === 'filtered' || route.outcome === 'filter_error')
        .map((route) => ({
          activity_id: route.activityId,
          activity_name: route.activityName,
          status: route.outcome as 'filtered' | 'filter_error',
          detail: route.detail ?? '',
        })),
    };
  }

  function toBulkRecord(row: BulkReplayRow): BulkReplayRecord {
    return {
      id: row.id,
      dry_run: false,
      filter: row.filter as BulkReplayRecord['filter'],
      mode: row.mode as ReplayMode,
      status: row.status as BulkReplayRecord['status'],
      total: row.total,
      processed: row.processed,
      started: row.started,
      skipped: row.skipped,
      skipped_reasons: row.skippedReasons as Record<string, number>,
      created_at: row.createdAt.toISOString(),
      updated_at: row.updatedAt.toISOString(),
      completed_at: row.completedAt === null ? null : row.completedAt.toISOString(),
    };
  }

  function selectionOf(filter: BulkReplayRecord['filter']): ReplaySelection {
    return {
      outcome: filter.outcome,
      from: new Date(filter.from),
      to: new Date(filter.to),
      ...(filter.event_type === null ? {} : { eventType: filter.event_type }),
      ...(filter.source === null ? {} : { source: filter.source }),
    };
  }

  return {
    /** `POST /v1/events/{event_id}/replay`. */
    async replayOne(
      eventId: string,
      mode: ReplayMode,
      actor: string,
      header: string | undefined,
    ): Promise<ReplayResponse> {
      const key = header === undefined ? randomUUID() : parseIdempotencyKey(header);
      if (key === '')
        throw new InvalidInputError('Idempotency-Key is empty', [
          { path: 'headers.idempotency-key', message: 'must not be empty' },
        ]);
      return await replay(eventId, mode, { actor, key });
    },

    /** One event of a bulk replay (the runner's step). */
    replay,

    /** `POST /v1/events/replay`: counts (dry run) or records a bulk replay, which the runner carries out. */
    async bulk(
      request: BulkReplayRequest,
      actor: string,
      header: string | undefined,
      now: Date = new Date(),
    ): Promise<BulkReplayOutcome> {
      const { filter } = request;
      const from = new Date(filter.from);
      // Events cannot arrive in the past: the selection ends now at the latest, so it cannot grow later.
      const to = new Date(Math.min(new Date(filter.to).getTime(), now.getTime()));
      if (to.getTime() <= from.getTime())
        throw new InvalidInputError('filter.to must be after filter.from (and filter.from in the past)', [
          { path: 'filter.to', message: 'must be after filter.from' },
        ]);
      if (to.getTime() - from.getTime() > MAX_BULK_REPLAY_RANGE_DAYS * 86_400_000)
        throw new InvalidInputError(`filter spans more than ${MAX_BULK_REPLAY_RANGE_DAYS} days`, [
          { path: 'filter.to', message: `must be at most ${MAX_BULK_REPLAY_RANGE_DAYS} days after filter.from` },
        ]);
      const stored: BulkReplayRecord['filter'] = {
        event_type: filter.event_type ?? null,
        source: filter.source ?? null,
        outcome: filter.outcome,
        from: from.toISOString(),
        to: to.toISOString(),
      };
      const headerKey = header === undefined ? undefined : parseIdempotencyKey(header);
      if (headerKey === '')
        throw new InvalidInputError('Idempotency-Key is empty', [
          { path: 'headers.idempotency-key', message: 'must not be empty' },
        ]);
      // Without a key the request itself is the key (as sent: a `to` in the future stays the same request).
      const id = bulkReplayId(headerKey ?? canonicalJson({ filter, mode: request.mode }));
      if (!request.dry_run) {
        const existing = await deps.replays.getBulk(id);
        if (existing !== undefined) return { kind: 'recorded', answer: toBulkRecord(existing) };
      }
      const total = await deps.replays.countSelection(selectionOf(stored), MAX_BULK_REPLAY_EVENTS + 1);
      if (request.dry_run)
        return {
          kind: 'counted',
          answer: { dry_run: true, total, cap: MAX_BULK_REPLAY_EVENTS, over_cap: total > MAX_BULK_REPLAY_EVENTS },
        };
      if (total > MAX_BULK_REPLAY_EVENTS)
        throw new InvalidInputError(
          `the filter selects more than ${MAX_BULK_REPLAY_EVENTS} events; one bulk replay takes at most ${MAX_BULK_REPLAY_EVENTS}`,
          [
            {
              path: 'filter',
              message: `selects more than ${MAX_BULK_REPLAY_EVENTS} events: narrow it or split the time range`,
            },
          ],
        );
      const { row, created } = await deps.replays.createBulk({
        id,
        filter: stored,
        mode: request.mode,
        total,
        requestedBy: actor,
      });
      if (created) bulkAccepted?.();
      return { kind: 'recorded', answer: toBulkRecord(row) };
    },

    async getBulk(id: string): Promise<BulkReplayRecord> {
      const row = await deps.replays.getBulk(id);
      if (row === undefined) throw new NotFoundError('bulk replay', id);
      return toBulkRecord(row);
    },

    selectionOf,

    /** Called once per bulk replay accepted by this process (the runner looks for work at once). */
    onBulkAccepted(listener: () => void): void {
      bulkAccepted = listener;
    },
  };
}

export type ReplayService = ReturnType<typeof createReplayService>;
