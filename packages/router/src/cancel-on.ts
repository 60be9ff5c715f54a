import type { EventEnvelope, EventTrigger, Logger, Trigger } from '@activity-core/contracts';
import type {
  CancelCandidate,
  CancellationsRepository,
  CancelScanDecision,
  EventCancellationRow,
} from '@activity-core/db';
import { compileMatchExpression, evaluateMatch, type CompileFilterResult } from '@activity-core/filters';
import type { RunCanceller } from '@activity-core/temporal/client';
import type { AvailabilityGate } from './availability-gate';
import { deliverPending, type PendingWorkFailure } from './gated-delivery';
import type { DefinitionIndex, IndexableDefinition } from './definition-index';
import { eventTriggerMatches } from './matching';

/**
 * cancel_on: an event that cancels running runs of an activity whose trigger
 * names it. When an event is routed, every enabled definition with a
 * `cancel_on` entry for its type gets one look at its running runs, and those
 * queued for a concurrency slot (at most
 * `maxRunsPerEvent` of them, oldest first); each entry's match expression is
 * evaluated with the event and the run's trigger event, and matching runs
 * get a cancellation request through Temporal. The look and its choices are
 * recorded once per (event, activity) before Temporal is asked; requests
 * Temporal did not take stay pending, and the event stays pending with them,
 * so the dispatcher retries them as it retries routes. See docs/cancel-on.md.
 */

/** One `cancel_on` entry with where it is in the definition, for the decision log. */
interface WatchEntry {
  triggerIndex: number;
  entryIndex: number;
  trigger: EventTrigger;
  match: string;
}

/** A definition with `cancel_on` entries for one event type. */
export interface CancelWatcher {
  id: string;
  name: string;
  version: number;
  entries: readonly WatchEntry[];
}

/** The watchers per event type, built once per loaded index. */
const watchersByIndex = new WeakMap<object, Map<string, CancelWatcher[]>>();

/** Definitions in `index` with a `cancel_on` entry for exactly `eventType`, in registration order. */
export function cancelWatchers<R extends IndexableDefinition>(
  index: DefinitionIndex<R>,
  eventType: string,
): CancelWatcher[] {
  let byType = watchersByIndex.get(index);
  if (byType === undefined) {
    byType = new Map();
    for (const definition of index.entries) {
      const perType = new Map<string, WatchEntry[]>();
      definition.triggers.forEach((trigger: Trigger, triggerIndex) => {
        if (trigger.type !== 'event') return;
        (trigger.cancel_on ?? []).forEach((entry, entryIndex) => {
          const list = perType.get(entry.event_type) ?? [];
          list.push({ triggerIndex, entryIndex, trigger, match: entry.match });
          perType.set(entry.event_type, list);
        });
      });
      for (const [type, entries] of perType) {
        const watcher: CancelWatcher = {
          id: definition.id,
          name: definition.name,
          version: definition.version,
          entries,
        };
        const list = byType.get(type);
        if (list === undefined) byType.set(type, [watcher]);
        else list.push(watcher);
      }
    }
    watchersByIndex.set(index, byType);
  }
  return byType.get(eventType) ?? [];
}

const compiled = new Map<string, CompileFilterResult>();
const COMPILED_CACHE_SIZE = 1_000;

function compiledMatch(expression: string): CompileFilterResult {
  let result = compiled.get(expression);
  if (result === undefined) {
    result = compileMatchExpression(expression);
    if (compiled.size >= COMPILED_CACHE_SIZE) compiled.delete(compiled.keys().next().value as string);
    compiled.set(expression, result);
  }
  return result;
}

function isEnvelope(value: unknown): value is EventEnvelope {
  return (
    typeof value === 'object' && value !== null && typeof (value as { event_type?: unknown }).event_type === 'string'
  );
}

/**
 * Which of `candidates` (running or queued runs of the watcher's activity) `event`
 * cancels. An entry applies to a run when the trigger it belongs to matches
 * the run's trigger event (type and source); the first entry whose match
 * expression is true cancels the run. An expression that fails on a run (a
 * missing key) does not cancel it and is counted in `errors`; so is a run
 * whose trigger event is no longer stored.
 */
export function decideCancellations(
  watcher: CancelWatcher,
  event: EventEnvelope,
  candidates: readonly CancelCandidate[],
): CancelScanDecision {
  const decision: CancelScanDecision = { cancel: [], errors: 0 };
  for (const candidate of candidates) {
    const triggerEvent = candidate.triggerEvent;
    if (!isEnvelope(triggerEvent)) {
      decision.errors += 1;
      continue;
    }
    let failed = false;
    for (const entry of watcher.entries) {
      if (!eventTriggerMatches(entry.trigger, triggerEvent)) continue;
      const expression = compiledMatch(entry.match);
      if (!expression.ok) {
        failed = true;
        continue;
      }
      const outcome = evaluateMatch(expression.filter, { event, trigger: { event: triggerEvent } });
      if (outcome.outcome === 'match') {
        decision.cancel.push({
          runId: candidate.runId,
          workflowId: candidate.workflowId,
          detail: `triggers[${entry.triggerIndex}].cancel_on[${entry.entryIndex}] matched: ${entry.match}`.slice(
            0,
            1_000,
          ),
        });
        failed = false;
        break;
      }
      if (outcome.outcome === 'error') failed = true;
    }
    if (failed) decision.errors += 1;
  }
  return decision;
}

export interface CancelOnDeps {
  cancellations: Pick<CancellationsRepository, 'state' | 'scan' | 'settle'>;
  canceller: Pick<RunCanceller, 'cancel'>;
  logger: Logger;
  /** Most running runs of one activity one event examines; the scan records when there were more. @default 1000 */
  maxRunsPerEvent?: number;
}

/** Why some of an event's cancellations are not done yet (the event stays pending for the dispatcher). */
export type CancelOnFailure = PendingWorkFailure;

export function createCancelOn(deps: CancelOnDeps) {
  const maxRuns = deps.maxRunsPerEvent ?? 1_000;

  return {
    /** True when some definition in `index` cancels runs on events of this type: such an event is stored pending. */
    watches<R extends IndexableDefinition>(index: DefinitionIndex<R>, eventType: string): boolean {
      return cancelWatchers(index, eventType).length > 0;
    },

    /**
     * Scans (once) every watching activity not scanned yet for this event,
     * then asks Temporal to cancel every run still pending for it. Never
     * throws: what could not be done is returned, and stays recorded as
     * pending. `quick` skips the read when the index has no watchers (a
     * just-accepted event, whose cancellations cannot exist yet).
     */
    async process<R extends IndexableDefinition>(
      envelope: EventEnvelope,
      /** The index the event was routed on, or how to get the current one (a dispatcher retry). */
      definitions: DefinitionIndex<R> | (() => Promise<DefinitionIndex<R>>),
      gate: AvailabilityGate,
      options: { quick: boolean; timeoutMs: number; probeTimeoutMs: number },
    ): Promise<CancelOnFailure | undefined> {
      let index: DefinitionIndex<R>;
      try {
        index = typeof definitions === 'function' ? await definitions() : definitions;
      } catch (error) {
        return { message: (error as Error).message, unreachable: false };
      }
      const watchers = cancelWatchers(index, envelope.event_type);
      if (options.quick && watchers.length === 0) return undefined;
      let failure: CancelOnFailure | undefined;
      let pending: EventCancellationRow[];
      let scanned: Set<string>;
      try {
        ({ pending, scanned } = await deps.cancellations.state(envelope.event_id));
      } catch (error) {
        deps.logger.warn(
          { eventId: envelope.event_id, err: error },
          'cancel_on: could not read the cancellation state; the dispatcher will retry',
        );
        return { message: (error as Error).message, unreachable: false };
      }
      for (const watcher of watchers) {
        if (scanned.has(watcher.id)) continue;
        try {
          const fresh = await deps.cancellations.scan({
            eventId: envelope.event_id,
            activityId: watcher.id,
            activityVersion: watcher.version,
            activityName: watcher.name,
            maxRuns,
            decide: (candidates) => decideCancellations(watcher, envelope, candidates),
          });
          if (fresh !== undefined) pending.push(...fresh);
        } catch (error) {
          failure = { message: (error as Error).message, unreachable: false };
          deps.logger.warn(
            { eventId: envelope.event_id, activityId: watcher.id, err: error },
            'cancel_on: scan failed; the dispatcher will retry',
          );
        }
      }
      return await deliverPending({
        rows: pending,
        gate,
        timeouts: options,
        call: (row, deadline) => deps.canceller.cancel(row.workflowId, { deadline }),
        settle: (row, outcome) => deps.cancellations.settle(row.eventId, row.runId, outcome),
        logger: deps.logger,
        logFields: (row) => ({ eventId: envelope.event_id, workflowId: row.workflowId }),
        messages: {
          deferred: 'Temporal is unreachable; cancellation deferred until it answers',
          notCalled: 'cancel_on: cancellation not requested; the dispatcher will retry',
          settled: 'cancel_on: run cancellation requested',
          notSettled: 'cancel_on: could not record the cancellation; the dispatcher will retry',
        },
        failure,
      });
    },
  };
}

export type CancelOn = ReturnType<typeof createCancelOn>;
