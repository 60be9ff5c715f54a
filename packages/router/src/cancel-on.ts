import {
  acceptsSource,
  type EventEnvelope,
  type EventTrigger,
  type Logger,
  type Trigger,
} from '@activity-core/contracts';
import type {
  CancelCandidate,
  CancelCandidateCursor,
  CancellationsRepository,
  CancelScanDecision,
  EventCancellationRow,
} from '@activity-core/db';
import {
  compileMatchExpression,
  evaluateMatch,
  MAX_FILTER_EVALUATION_COST,
  type CompileFilterResult,
} from '@activity-core/filters';
import type { RunCanceller } from '@activity-core/temporal/client';
import type { AvailabilityGate } from './availability-gate';
import { deliverPending, type PendingWorkFailure } from './gated-delivery';
import type { DefinitionIndex, IndexableDefinition } from './definition-index';
import { eventTriggerMatches } from './matching';

/**
 * cancel_on: an event that cancels running runs of an activity whose trigger
 * names it. When an event is routed, every enabled definition with a
 * `cancel_on` entry for its type gets one look at its running runs, and those
 * queued for a concurrency slot (oldest first, read a page at a time with no
 * transaction open, at most `maxRunsPerEvent` of them); each entry's match
 * expression is evaluated with the event and the run's trigger event, all of
 * one event's evaluations paying from one budget (MAX_CANCEL_SCAN_COST), and
 * matching runs get a cancellation request through Temporal. The look and its
 * choices are recorded once per (event, activity), with whether it stopped
 * short (`capped`), before Temporal is asked; requests Temporal did not take
 * stay pending, and the event stays pending with them, so the dispatcher
 * retries them as it retries routes. See docs/cancel-on.md.
 */

/** One `cancel_on` entry with where it is in the definition, for the decision log. */
interface WatchEntry {
  triggerIndex: number;
  entryIndex: number;
  trigger: EventTrigger;
  /** The sources whose events this entry accepts; undefined: any. */
  sources: readonly string[] | undefined;
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

/**
 * Definitions in `index` with a `cancel_on` entry for exactly `eventType`, in
 * registration order; given `source`, only the entries that accept an event
 * from it (an entry naming other sources is not evaluated at all, so an event
 * from elsewhere spends nothing and cancels nothing).
 */
export function cancelWatchers<R extends IndexableDefinition>(
  index: DefinitionIndex<R>,
  eventType: string,
  source?: string,
): CancelWatcher[] {
  const watchers = allCancelWatchers(index, eventType);
  if (
    source === undefined ||
    watchers.every((watcher) => watcher.entries.every((entry) => entry.sources === undefined))
  )
    return watchers;
  return watchers
    .map((watcher) => ({
      ...watcher,
      entries: watcher.entries.filter((entry) => acceptsSource(entry.sources, source)),
    }))
    .filter((watcher) => watcher.entries.length > 0);
}

function allCancelWatchers<R extends IndexableDefinition>(
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
          list.push({ triggerIndex, entryIndex, trigger, sources: entry.sources, match: entry.match });
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
 * Most cost units (the filters' counted units) one event spends on all the
 * `cancel_on` match expressions it evaluates, across every watching activity
 * and every run. Each expression keeps its own limit
 * (MAX_FILTER_EVALUATION_COST); this bounds their sum, which would otherwise
 * grow with the number of running runs: an expression that walks a large list
 * in the event costs the same for every candidate, and a thousand candidates
 * held the event loop for over a minute. Ordinary expressions spend tens of
 * units, so tens of thousands of runs stay far below it; the adversarial
 * worst case is about twice one filter's (some 0.8 s on the 2-vCPU dev
 * container), spent in slices between which the process serves other
 * requests. When it is spent, the rest of the runs are not examined: the scan
 * is recorded `capped` and they are left running.
 * @default 10_000_000
 */
export const MAX_CANCEL_SCAN_COST = 2 * MAX_FILTER_EVALUATION_COST;

/** What is left of one event's MAX_CANCEL_SCAN_COST, shared by every page and activity it scans. */
export interface CancelScanBudget {
  remaining: number;
}

/**
 * Which of `candidates` (running or queued runs of the watcher's activity) `event`
 * cancels. An entry applies to a run when the trigger it belongs to matches
 * the run's trigger event (type and source); the first entry whose match
 * expression is true cancels the run. An expression that fails on a run (a
 * missing key) does not cancel it and is counted in `errors`; so is a run
 * whose trigger event is no longer stored. Evaluations spend `budget` (a
 * fresh MAX_CANCEL_SCAN_COST when absent); once it cannot pay for a run's
 * whole evaluation, that run and the rest are left unexamined (`examined`
 * says how many were).
 */
export function decideCancellations(
  watcher: CancelWatcher,
  event: EventEnvelope,
  candidates: readonly CancelCandidate[],
  budget: CancelScanBudget = { remaining: MAX_CANCEL_SCAN_COST },
): CancelScanDecision {
  const decision: CancelScanDecision = { cancel: [], errors: 0, examined: candidates.length };
  candidates: for (const [index, candidate] of candidates.entries()) {
    if (budget.remaining <= 0) {
      decision.examined = index;
      break;
    }
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
      const limit = Math.min(MAX_FILTER_EVALUATION_COST, budget.remaining);
      let spent = 0;
      const outcome = evaluateMatch(
        expression.filter,
        { event, trigger: { event: triggerEvent } },
        { limit, spent: (units) => (spent = units) },
      );
      budget.remaining -= spent;
      if (outcome.outcome === 'error' && spent >= limit && limit < MAX_FILTER_EVALUATION_COST) {
        // Stopped by what was left of the event's budget, not by its own limit: this run was not examined.
        decision.examined = index;
        break candidates;
      }
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

/** Runs read (and decided) at a time: one scan never holds more than this many trigger events in memory. */
const SCAN_PAGE_SIZE = 100;
/** Longest stretch of evaluation between two yields to the event loop, so other requests are served while a scan spends its budget. */
const YIELD_AFTER_MS = 5;

/** `current` plus the rows of `fresh` it does not have yet (by run id). */
function mergePending(current: EventCancellationRow[], fresh: readonly EventCancellationRow[]): EventCancellationRow[] {
  const known = new Set(current.map((row) => row.runId));
  return [...current, ...fresh.filter((row) => !known.has(row.runId))];
}

const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export interface CancelOnDeps {
  cancellations: Pick<CancellationsRepository, 'state' | 'candidatesPage' | 'record' | 'settle'>;
  canceller: Pick<RunCanceller, 'cancel'>;
  logger: Logger;
  /**
   * Most running runs of one activity one event examines; the scan records
   * when there were more (`capped`). The evaluation budget
   * (MAX_CANCEL_SCAN_COST) bounds the work whatever this is.
   * @default 10000
   */
  maxRunsPerEvent?: number;
}

/** Why some of an event's cancellations are not done yet (the event stays pending for the dispatcher). */
export type CancelOnFailure = PendingWorkFailure;

export function createCancelOn(deps: CancelOnDeps) {
  const maxRuns = deps.maxRunsPerEvent ?? 10_000;

  /**
   * One activity's look for one event: pages of its running runs, each
   * decided in slices with the event loop free between them, until the runs,
   * `maxRuns` or the event's budget run out. No transaction is open while it
   * reads or decides; `record` then stores the outcome once.
   */
  async function scanActivity(
    watcher: CancelWatcher,
    envelope: EventEnvelope,
    budget: CancelScanBudget,
  ): Promise<Omit<CancelScanDecision, 'examined'> & { examined: number; capped: boolean }> {
    const outcome = { cancel: [] as CancelScanDecision['cancel'], errors: 0, examined: 0, capped: false };
    let after: CancelCandidateCursor | undefined;
    let lastYield = performance.now();
    for (;;) {
      const want = Math.min(SCAN_PAGE_SIZE, maxRuns - outcome.examined);
      const page = await deps.cancellations.candidatesPage({
        eventId: envelope.event_id,
        activityId: watcher.id,
        ...(after === undefined ? {} : { after }),
        limit: want + 1,
      });
      if (want === 0) {
        outcome.capped = page.length > 0;
        return outcome;
      }
      const candidates = page.slice(0, want);
      for (const candidate of candidates) {
        if (performance.now() - lastYield > YIELD_AFTER_MS) {
          await yieldToEventLoop();
          lastYield = performance.now();
        }
        const decision = decideCancellations(watcher, envelope, [candidate], budget);
        outcome.cancel.push(...decision.cancel);
        outcome.errors += decision.errors;
        if (decision.examined === 0) {
          // The event's evaluation budget ran out: the rest are left running.
          outcome.capped = true;
          return outcome;
        }
        outcome.examined += 1;
      }
      if (page.length <= want) return outcome;
      const last = candidates[candidates.length - 1]!;
      after = { createdAt: last.createdAt, runId: last.runId };
    }
  }

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
      const watchers = cancelWatchers(index, envelope.event_type, envelope.source);
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
      // One budget for every activity this event scans in this pass.
      const budget: CancelScanBudget = { remaining: MAX_CANCEL_SCAN_COST };
      for (const watcher of watchers) {
        if (scanned.has(watcher.id)) continue;
        try {
          const scan = await scanActivity(watcher, envelope, budget);
          if (scan.capped)
            deps.logger.warn(
              { eventId: envelope.event_id, activityId: watcher.id, examined: scan.examined },
              'cancel_on: scan capped (too many running runs, or the event spent its evaluation budget); the rest are left running',
            );
          const fresh = await deps.cancellations.record({
            eventId: envelope.event_id,
            activityId: watcher.id,
            activityVersion: watcher.version,
            activityName: watcher.name,
            examined: scan.examined,
            capped: scan.capped,
            errors: scan.errors,
            cancel: scan.cancel,
          });
          if (fresh !== undefined) pending.push(...fresh);
          // Another dispatch of this event (a concurrent dispatcher, another process) recorded this scan first
          // and may die before it asks Temporal: ask for its pending cancellations too (a repeat is one
          // cancellation to Temporal).
          else pending = mergePending(pending, (await deps.cancellations.state(envelope.event_id)).pending);
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
